package contexts

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
)

func ptr[T any](v T) *T { return &v }

func fullRecord(now time.Time) Record {
	return Record{ID: "0190a000-0000-7000-8000-000000000001", ExternalID: ptr("doc-1"), RunID: "run", BotID: ptr("bot"),
		SessionID: ptr("s1"), Tenant: ptr("acme"), Source: ptr("slack"), CreatedAt: now, Role: "assistant",
		ContentType: "text/markdown", TextPayload: ptr("hello"), BinaryPayload: []byte{0, 1, 2}, PayloadURI: ptr("s3://b/k"),
		PayloadSize: ptr(int64(3)), PayloadChecksum: ptr("sha256:x"), Embedding: []float32{1, 2, 3},
		StateMetadata: &StateMetadata{Step: ptr(int32(4)), ActivePlanID: ptr("p"), TokensUsed: ptr(int32(9)), Custom: ptr("c")},
		Metadata:      json.RawMessage(`{"a":1}`), Relationships: []Relationship{{TargetID: "t", Relation: "cites", Weight: ptr(float32(0.5))}, {TargetID: "u", Relation: "is"}},
		ExpiresAt: ptr(now.Add(time.Hour)), RetentionPolicy: ptr("30d"), LifecycleStatus: LifecycleActive, RetiredAt: ptr(now),
		RetiredReason: ptr("old"), SupersedesID: ptr("a"), SupersededByID: ptr("b")}
}

// Every field survives the trip through Arrow rows of the context schema, and a projection
// reads back only its columns.
func TestArrowRoundTrip(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	now := time.Date(2026, 12, 6, 1, 2, 3, 4000, time.UTC)
	full := fullRecord(now)
	minimal := Record{ID: "0190a000-0000-7000-8000-000000000002", RunID: "run", CreatedAt: now, Role: "user", ContentType: "text/plain", LifecycleStatus: LifecycleActive}
	rec, err := ToArrow(mem, []Record{full, minimal})
	require.NoError(t, err)
	defer rec.Release()
	require.True(t, rec.Schema().Equal(Schema))
	back, err := FromArrow(rec)
	require.NoError(t, err)
	require.Equal(t, []Record{full, minimal}, back)

	idCol, embCol := rec.Schema().FieldIndices("id")[0], rec.Schema().FieldIndices("embedding")[0]
	proj := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{rec.Schema().Field(idCol), rec.Schema().Field(embCol)}, nil),
		[]arrow.Array{rec.Column(idCol), rec.Column(embCol)}, rec.NumRows())
	defer proj.Release()
	cols, err := FromArrow(proj)
	require.NoError(t, err)
	require.Equal(t, []Record{{ID: full.ID, Embedding: full.Embedding}, {ID: minimal.ID}}, cols)
}

func TestNewRecordAndPatchChecks(t *testing.T) {
	now := time.Now()
	r := Rules{EmbeddingDim: 2}
	rec, err := r.NewRecord(AddRecord{TextPayload: ptr("x"), BinaryPayload: []byte("abc")}, "id1", "run", now)
	require.NoError(t, err)
	require.Equal(t, "user", rec.Role)
	require.Equal(t, "text/plain", rec.ContentType)
	require.Equal(t, LifecycleActive, rec.LifecycleStatus)
	require.EqualValues(t, 3, *rec.PayloadSize)

	for name, a := range map[string]AddRecord{
		"dimension":   {Embedding: []float32{1}},
		"empty emb":   {Embedding: []float32{}},
		"self":        {ExternalID: ptr("e"), Relationships: []Relationship{{TargetID: "e", Relation: "is"}}},
		"no relation": {Relationships: []Relationship{{TargetID: "x"}}},
		"big meta":    {Metadata: json.RawMessage(`"` + string(make([]byte, MaxMetadataBytes)) + `"`)},
		"bad meta":    {Metadata: json.RawMessage(`{`)},
		"empty xid":   {ExternalID: ptr("")},
		"weight":      {Relationships: []Relationship{{TargetID: "x", Relation: "r", Weight: ptr(float32(nan()))}}},
		"neg size":    {PayloadSize: ptr(int64(-1))},
	} {
		_, err := r.NewRecord(a, "id1", "run", now)
		require.Error(t, err, name)
	}
	_, err = r.NewRecord(AddRecord{Relationships: []Relationship{{TargetID: "id1", Relation: "is"}}}, "id1", "run", now)
	require.Error(t, err, "a relationship to the record's own id")
	_, err = Rules{}.NewRecord(AddRecord{Embedding: []float32{1, 2, 3, 4, 5}}, "id1", "run", now)
	require.NoError(t, err, "without a declared dimension any length is taken")

	require.True(t, (&Patch{}).Empty())
	require.True(t, (&Patch{Metadata: json.RawMessage("null")}).Empty())
	next, err := r.Apply(rec, Patch{Metadata: json.RawMessage(`{"v":2}`), LifecycleStatus: ptr("contradicted")}, "id2", now)
	require.NoError(t, err)
	require.Equal(t, "id1", *next.SupersedesID)
	require.Equal(t, "x", *next.TextPayload)
	require.Equal(t, "contradicted", next.LifecycleStatus)
	_, err = r.Apply(rec, Patch{Embedding: []float32{1, 2, 3}}, "id2", now)
	require.Error(t, err)
	require.NoError(t, r.CheckQuery("q", []float32{1, 2}))
	require.Error(t, r.CheckQuery("q", nil))
}

func nan() float64 { var z float64; return z / z }

func TestVisibility(t *testing.T) {
	now := time.Now()
	life := Lifecycle{Now: now}
	base := Record{ID: "a", LifecycleStatus: LifecycleActive}
	require.True(t, life.Visible(&base))
	expired := base
	expired.ExpiresAt = ptr(now)
	require.False(t, life.Visible(&expired), "expiry at now hides")
	require.True(t, Lifecycle{Now: now, IncludeExpired: true}.Visible(&expired))
	for _, hidden := range []Record{
		{ID: "a", LifecycleStatus: LifecycleActive, RetiredAt: &now},
		{ID: "a", LifecycleStatus: LifecycleActive, SupersededByID: ptr("b")},
		{ID: "a", LifecycleStatus: "superseded"},
	} {
		require.False(t, life.Visible(&hidden))
		require.True(t, Lifecycle{Now: now, IncludeRetired: true}.Visible(&hidden))
	}
	contradicted := Record{ID: "a", LifecycleStatus: LifecycleContradicted}
	require.True(t, life.Visible(&contradicted))
	claim := Claim("x", "a", now)
	require.False(t, Lifecycle{Now: now, IncludeExpired: true, IncludeRetired: true}.Visible(&claim), "a claim row is never a record")
	require.Equal(t, "a", ClaimedID(claim))
	require.Empty(t, ClaimedID(base))
}

func TestFilters(t *testing.T) {
	rec := Record{ID: "a", BotID: ptr("support-bot"), SessionID: ptr("incident-1"), Role: "assistant", ContentType: "text/plain",
		Tenant: ptr("acme"), CreatedAt: time.Date(2026, 6, 9, 3, 0, 0, 0, time.UTC),
		Metadata: json.RawMessage(`{"scope": "team", "tags": ["runbook", "ownership"], "confidence": 0.92, "n": 1}`)}
	f, err := ParseFilters(json.RawMessage(`{"bot_id": "support-bot", "session_id": "incident-1", "role": "assistant",
		"content_type": "text/plain", "tenant": "acme", "created_at": {"gte": "2026-06-09T02:00:00Z", "lte": "2026-06-09T04:00:00Z"},
		"scope": "team", "tags": {"contains": "runbook"}, "confidence": 0.92, "n": 1, "source": null}`))
	require.NoError(t, err)
	require.True(t, f.Match(&rec))
	for _, miss := range []string{`{"session_id": "other"}`, `{"created_after": "2026-06-09T03:00:01Z"}`, `{"tags": {"contains": "x"}}`,
		`{"scope": "Team"}`, `{"missing": 1}`, `{"n": 1.0}`, `{"source": "slack"}`, `{"scope": {"contains": "ea"}, "n": 2}`} {
		f, err := ParseFilters(json.RawMessage(miss))
		require.NoError(t, err, miss)
		require.False(t, f.Match(&rec), miss)
	}
	f, err = ParseFilters(json.RawMessage(`{"scope": {"contains": "ea"}}`))
	require.NoError(t, err)
	require.True(t, f.Match(&rec), "contains on a string is a substring")
	for _, bad := range []string{`[1]`, `{"role": 3}`, `{"created_at": {"gt": "x"}}`, `{"created_at_start": "yesterday"}`, `{`} {
		_, err := ParseFilters(json.RawMessage(bad))
		require.Error(t, err, bad)
	}
	empty, err := ParseFilters(nil)
	require.NoError(t, err)
	require.True(t, empty.Match(&rec))
}

func FuzzParseFilters(f *testing.F) {
	f.Add([]byte(`{"role": "user", "tags": {"contains": "a"}, "created_at": {"gte": "2026-01-01T00:00:00Z"}}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		fl, err := ParseFilters(doc)
		if err != nil {
			return
		}
		rec := Record{ID: "a", Role: "user", Metadata: json.RawMessage(`{"tags": ["a"]}`)}
		_ = fl.Match(&rec)
	})
}

// Distances are the vector indexes' (the metric's definitions, zero vectors under cosine).
func TestDistance(t *testing.T) {
	require.InDelta(t, 0, Distance(MetricCosine, []float32{1, 1}, []float32{2, 2}), 1e-6)
	require.InDelta(t, 1, Distance(MetricCosine, []float32{0, 0}, []float32{2, 2}), 1e-6)
	require.InDelta(t, 2, Distance(MetricL2, []float32{0, 0}, []float32{1, 1}), 1e-6)
	require.InDelta(t, -1, Distance(MetricDot, []float32{1, 1}, []float32{1, 1}), 1e-6)
	require.InDelta(t, 2, Distance("unknown", []float32{0, 0}, []float32{1, 1}), 1e-6, "an unknown metric is l2")
}

func TestFuse(t *testing.T) {
	vector := []Scored{{"a", 0.1}, {"b", 0.2}, {"c", 0.3}}
	text := []Scored{{"c", 9}, {"a", 5}, {"d", 1}}
	got := Fuse(vector, text, 3)
	require.Len(t, got, 3)
	require.Equal(t, "a", got[0].ID, "first and second beats third and first")
	require.Equal(t, "c", got[1].ID)
	require.Equal(t, "b", got[2].ID, "b (second in one channel) beats d (third in one)")
	require.Equal(t, []string{ChannelVector, ChannelText}, got[0].Channels)
	require.InDelta(t, 1.0/61+1.0/62, got[0].Score, 1e-7)
	require.Equal(t, float32(0.1), *got[0].VectorDistance)
	require.Equal(t, float32(5), *got[0].TextScore)
	require.Nil(t, got[2].TextScore)
	require.Empty(t, Fuse(nil, nil, 5))
	require.Equal(t, 50, CandidateDepth(1))
	require.Equal(t, 400, CandidateDepth(100))
}
