// The context kind: agent memory (lance-context's ContextRecord fields) under the fixed schema
// the contexts package defines. A store's embedding dimension and distance metric are declared at
// creation (ContextConfig, kept in the catalog's options) and checked on every write.
package kinds

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/strata-store/strata/contexts"
	"github.com/strata-store/strata/storage/vecindex"
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
		return contexts.MetricL2
	}
	return c.DistanceMetric
}

// Validate checks a declared config (errors wrap catalog.ErrInvalid through the caller) and
// normalizes its metric's case.
func (c *ContextConfig) Validate() error {
	if c.EmbeddingDim < 0 || c.EmbeddingDim > contexts.MaxEmbeddingDim {
		return fmt.Errorf("embedding_dim must be between 1 and %d (or absent: any length)", contexts.MaxEmbeddingDim)
	}
	c.DistanceMetric = strings.ToLower(c.DistanceMetric)
	if _, err := vecindex.ParseMetric(c.DistanceMetric); err != nil { // the names the indexes take
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
		if !slices.Contains(contexts.BlobColumns, col) {
			return fmt.Errorf("blob_columns: %q is not a binary column of a context store (binary_payload is)", col)
		}
	}
	return nil
}

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
