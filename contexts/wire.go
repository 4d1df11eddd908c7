// The wire form of the context routes (lance-context's DTOs, field for field where it has them):
// requests and answers of add, upsert, update, delete, get, list, search and retrieve. The API
// serves them, the Go client sends and reads them.
package contexts

import "encoding/json"

// AddRecordsRequest is the body of POST .../records; the answer is {version, ids, count}.
type AddRecordsRequest struct {
	Records []AddRecord `json:"records"`
}

// UpsertRequest is the body of PUT .../records.
type UpsertRequest struct {
	Record AddRecord `json:"record"`
	Key    string    `json:"key,omitempty"`
}

// UpsertBatchRequest is the body of PUT .../records/batch.
type UpsertBatchRequest struct {
	Records []AddRecord `json:"records"`
	Key     string      `json:"key,omitempty"`
}

// UpsertResult is one upsert's outcome.
type UpsertResult struct {
	Inserted   bool    `json:"inserted"`
	ReplacedID *string `json:"replaced_id,omitempty"`
	Record     Record  `json:"record"`
}

// UpsertResponse is the body answering PUT .../records.
type UpsertResponse struct {
	Version uint64 `json:"version"`
	UpsertResult
}

// UpsertBatchResponse is the body answering PUT .../records/batch.
type UpsertBatchResponse struct {
	Version uint64         `json:"version"`
	Results []UpsertResult `json:"results"`
}

// UpdateRequest is the body of PATCH .../records: one of id or external_id.
type UpdateRequest struct {
	ID         *string `json:"id,omitempty"`
	ExternalID *string `json:"external_id,omitempty"`
	Patch      Patch   `json:"patch"`
}

// UpdateResponse answers PATCH .../records.
type UpdateResponse struct {
	Version    uint64  `json:"version"`
	Updated    bool    `json:"updated"`
	ReplacedID *string `json:"replaced_id,omitempty"`
	Record     *Record `json:"record,omitempty"`
}

// RecordResponse answers a get ({"record": null} when absent).
type RecordResponse struct {
	Record *Record `json:"record"`
}

// RecordsResponse answers a list or related.
type RecordsResponse struct {
	Records []Record `json:"records"`
}

// DeleteResponse answers a delete.
type DeleteResponse struct {
	Deleted bool   `json:"deleted"`
	Version uint64 `json:"version"`
}

// SearchRequest is the body of POST .../search (lance-context's SearchRequest).
type SearchRequest struct {
	Query                []float32       `json:"query"`
	Limit                *int            `json:"limit,omitempty"`
	Filters              json.RawMessage `json:"filters,omitempty"`
	IncludeExpired       bool            `json:"include_expired,omitempty"`
	IncludeRetired       bool            `json:"include_retired,omitempty"`
	IncludeRelationships bool            `json:"include_relationships,omitempty"`
}

// SearchResult is one search result.
type SearchResult struct {
	Record   Record  `json:"record"`
	Distance float32 `json:"distance"`
}

// SearchResponse answers POST .../search.
type SearchResponse struct {
	Results []SearchResult `json:"results"`
}

// RetrieveRequest is the body of POST .../retrieve (lance-context's RetrieveRequest).
type RetrieveRequest struct {
	Text                 *string         `json:"text,omitempty"`
	Vector               []float32       `json:"vector,omitempty"`
	Limit                *int            `json:"limit,omitempty"`
	Filters              json.RawMessage `json:"filters,omitempty"`
	IncludeExpired       bool            `json:"include_expired,omitempty"`
	IncludeRetired       bool            `json:"include_retired,omitempty"`
	IncludeRelationships bool            `json:"include_relationships,omitempty"`
	Fusion               string          `json:"fusion,omitempty"`
}

// RetrieveResult is one retrieve result.
type RetrieveResult struct {
	Record          Record   `json:"record"`
	Score           float32  `json:"score"`
	VectorDistance  *float32 `json:"vector_distance,omitempty"`
	TextScore       *float32 `json:"text_score,omitempty"`
	MatchedChannels []string `json:"matched_channels,omitempty"`
}

// RetrieveResponse answers POST .../retrieve.
type RetrieveResponse struct {
	Results []RetrieveResult `json:"results"`
}
