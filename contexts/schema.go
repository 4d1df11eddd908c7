// The context store's table: its fixed schema, the key prefix of external-id claim rows, and the
// distance metrics a store may declare. A leaf of the package (Arrow only), so that the kinds
// registry and the clients can name them.
//
// External ids: besides its records, a context store holds one claim row per external id, keyed
// ExternalIDKeyPrefix + external id, that names the record holding the id now. Record ids are
// server-made lowercase UUIDs, which sort before the prefix, so a scan that stops before the
// prefix reads records only, and a lookup by external id is one point read.
package contexts

import "github.com/apache/arrow-go/v18/arrow"

var (
	str       = arrow.BinaryTypes.String
	large     = arrow.BinaryTypes.LargeString
	timestamp = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	// vectorType is how embeddings are stored: a list of float32, as a generic store's vector
	// columns are.
	vectorType = arrow.ListOfField(arrow.Field{Name: "item", Type: arrow.PrimitiveTypes.Float32, Nullable: true})
)

// The columns a context store's indexes cover: its vector indexes the embedding, its full-text
// indexes the text payload.
const (
	EmbeddingColumn = "embedding"
	TextColumn      = "text_payload"
)

// Schema is the schema of every context store (lance-context's ContextRecord fields).
var Schema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: str},
	{Name: "external_id", Type: str, Nullable: true},
	{Name: "run_id", Type: str},
	{Name: "bot_id", Type: str, Nullable: true},
	{Name: "session_id", Type: str, Nullable: true},
	{Name: "tenant", Type: str, Nullable: true},
	{Name: "source", Type: str, Nullable: true},
	{Name: "created_at", Type: timestamp},
	{Name: "role", Type: str},
	{Name: "content_type", Type: str},
	{Name: "text_payload", Type: large, Nullable: true},
	{Name: "binary_payload", Type: arrow.BinaryTypes.LargeBinary, Nullable: true},
	{Name: "payload_uri", Type: str, Nullable: true},
	{Name: "payload_size", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "payload_checksum", Type: str, Nullable: true},
	{Name: "embedding", Type: vectorType, Nullable: true},
	{Name: "state_metadata", Type: large, Nullable: true},
	{Name: "metadata", Type: large, Nullable: true},
	{Name: "relationships", Type: arrow.ListOf(arrow.StructOf(
		arrow.Field{Name: "target_id", Type: str},
		arrow.Field{Name: "relation", Type: str},
		arrow.Field{Name: "weight", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
	)), Nullable: true},
	{Name: "expires_at", Type: timestamp, Nullable: true},
	{Name: "retention_policy", Type: str, Nullable: true},
	{Name: "lifecycle_status", Type: str},
	{Name: "retired_at", Type: timestamp, Nullable: true},
	{Name: "retired_reason", Type: str, Nullable: true},
	{Name: "supersedes_id", Type: str, Nullable: true},
	{Name: "superseded_by_id", Type: str, Nullable: true},
}, nil)

// ExternalIDKeyPrefix starts the key of an external id's claim row (see the file comment).
const ExternalIDKeyPrefix = "xid:"

// Distance metrics a context store may declare (lance-context's names).
const (
	MetricL2     = "l2"     // squared Euclidean distance
	MetricCosine = "cosine" // 1 - cosine similarity
	MetricDot    = "dot"    // 1 - dot product
)

// MaxEmbeddingDim bounds an embedding's length (256 KiB of float32 at the limit), as a generic
// store's vector columns are bounded.
const MaxEmbeddingDim = 1 << 16

// BlobColumns are the schema's binary columns.
var BlobColumns = []string{"binary_payload"}

// JSONColumns hold JSON documents stored as text.
var JSONColumns = map[string]bool{"metadata": true, "state_metadata": true}
