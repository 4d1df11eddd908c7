// The context kind: agent memory (lance-context's ContextRecord fields) under a fixed schema. A
// store's embedding dimension and distance metric are declared at creation (ContextConfig, kept
// in the catalog's options) and checked on every write; the schema itself is the same for every
// context store, embeddings being a list of float32 as a generic store's vector columns are.
//
// External ids: besides its records, a context store holds one claim row per external id, keyed
// ExternalIDKeyPrefix + external id, that names the record holding the id now. Record ids are
// server-made lowercase UUIDs, which sort before the prefix, so a scan that stops before the
// prefix reads records only, and a lookup by external id is one point read.
package kinds

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// ContextSchema is the schema of every context store.
var ContextSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: utf8},
	{Name: "external_id", Type: utf8, Nullable: true},
	{Name: "run_id", Type: utf8},
	{Name: "bot_id", Type: utf8, Nullable: true},
	{Name: "session_id", Type: utf8, Nullable: true},
	{Name: "tenant", Type: utf8, Nullable: true},
	{Name: "source", Type: utf8, Nullable: true},
	{Name: "created_at", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
	{Name: "role", Type: utf8},
	{Name: "content_type", Type: utf8},
	{Name: "text_payload", Type: large, Nullable: true},
	{Name: "binary_payload", Type: bin, Nullable: true},
	{Name: "payload_uri", Type: utf8, Nullable: true},
	{Name: "payload_size", Type: i64, Nullable: true},
	{Name: "payload_checksum", Type: utf8, Nullable: true},
	{Name: "embedding", Type: VectorType, Nullable: true},
	{Name: "state_metadata", Type: large, Nullable: true},
	{Name: "metadata", Type: large, Nullable: true},
	{Name: "relationships", Type: arrow.ListOf(arrow.StructOf(
		arrow.Field{Name: "target_id", Type: utf8},
		arrow.Field{Name: "relation", Type: utf8},
		arrow.Field{Name: "weight", Type: f32, Nullable: true},
	)), Nullable: true},
	{Name: "expires_at", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "retention_policy", Type: utf8, Nullable: true},
	{Name: "lifecycle_status", Type: utf8},
	{Name: "retired_at", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "retired_reason", Type: utf8, Nullable: true},
	{Name: "supersedes_id", Type: utf8, Nullable: true},
	{Name: "superseded_by_id", Type: utf8, Nullable: true},
}, nil)

// ExternalIDKeyPrefix starts the key of an external id's claim row (see the file comment).
const ExternalIDKeyPrefix = "xid:"

// Distance metrics a context store may declare (lance-context's names).
const (
	MetricL2     = "l2"     // squared Euclidean distance
	MetricCosine = "cosine" // 1 - cosine similarity
	MetricDot    = "dot"    // 1 - dot product
)

// ContextConfig is what a context store declares at creation beyond its name: lance-context's
// create fields. It is kept in the catalog row's options.
type ContextConfig struct {
	// EmbeddingDim, when set, is the length every embedding (and every query vector) must have;
	// when zero, the first embeddings fix nothing and a search compares only vectors of the
	// query's length.
	EmbeddingDim   int               `json:"embedding_dim,omitempty"`
	DistanceMetric string            `json:"distance_metric,omitempty"`
	IDIndexType    string            `json:"id_index_type,omitempty"`
	BlobColumns    []string          `json:"blob_columns,omitempty"`
	StorageOptions map[string]string `json:"storage_options,omitempty"`
}

// Metric is the declared distance metric, l2 when none was.
func (c ContextConfig) Metric() string {
	if c.DistanceMetric == "" {
		return MetricL2
	}
	return c.DistanceMetric
}

// Validate checks a declared config (errors wrap catalog.ErrInvalid through the caller) and
// normalizes its metric's case.
func (c *ContextConfig) Validate() error {
	if c.EmbeddingDim < 0 || c.EmbeddingDim > MaxVectorDim {
		return fmt.Errorf("embedding_dim must be between 1 and %d", MaxVectorDim)
	}
	c.DistanceMetric = strings.ToLower(c.DistanceMetric)
	switch c.DistanceMetric {
	case "", MetricL2, MetricCosine, MetricDot:
	default:
		return fmt.Errorf("distance_metric %q is not one of l2, cosine, dot", c.DistanceMetric)
	}
	switch strings.ToLower(c.IDIndexType) {
	case "", "btree", "bitmap", "zonemap", "bloomfilter":
		// lance-context's scalar index kinds: Strata's key index serves every id lookup, so the
		// choice is accepted and kept, and changes nothing.
	default:
		return fmt.Errorf("id_index_type %q is not one of btree, bitmap, zonemap, bloomfilter", c.IDIndexType)
	}
	for _, col := range c.BlobColumns {
		if !slices.Contains(ContextBlobColumns, col) {
			return fmt.Errorf("blob_columns: %q is not a binary column of a context store (binary_payload is)", col)
		}
	}
	return nil
}

// ContextBlobColumns are the context schema's binary columns.
var ContextBlobColumns = []string{"binary_payload"}

// ParseContextConfig reads a context store's config from its catalog options (an empty
// document is the default config).
func ParseContextConfig(options json.RawMessage) (ContextConfig, error) {
	var c ContextConfig
	if len(options) == 0 || string(options) == "null" {
		return c, nil
	}
	if err := json.Unmarshal(options, &c); err != nil {
		return c, fmt.Errorf("context store options: %w", err)
	}
	return c, nil
}

// ContextJSONColumns hold JSON documents stored as text.
var ContextJSONColumns = map[string]bool{"metadata": true, "state_metadata": true}
