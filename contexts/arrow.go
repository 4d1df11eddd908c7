// Context records as Arrow rows of Schema, and back (any projection of it).
package contexts

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// ToArrow builds the rows of records under Schema. The caller releases the batch.
func ToArrow(mem memory.Allocator, records []Record) (arrow.RecordBatch, error) {
	b := array.NewRecordBuilder(mem, Schema)
	defer b.Release()
	for i := range records {
		r := &records[i]
		for c, f := range Schema.Fields() {
			if err := appendField(b.Field(c), f.Name, r); err != nil {
				return nil, err
			}
		}
	}
	return b.NewRecordBatch(), nil
}

func appendField(fb array.Builder, name string, r *Record) error {
	str := func(v *string) {
		if v == nil {
			fb.AppendNull()
			return
		}
		switch b := fb.(type) {
		case *array.StringBuilder:
			b.Append(*v)
		case *array.LargeStringBuilder:
			b.Append(*v)
		}
	}
	ts := func(t *time.Time) {
		if t == nil {
			fb.AppendNull()
			return
		}
		fb.(*array.TimestampBuilder).Append(arrow.Timestamp(t.UnixMicro()))
	}
	switch name {
	case "id":
		str(&r.ID)
	case "external_id":
		str(r.ExternalID)
	case "run_id":
		str(&r.RunID)
	case "bot_id":
		str(r.BotID)
	case "session_id":
		str(r.SessionID)
	case "tenant":
		str(r.Tenant)
	case "source":
		str(r.Source)
	case "created_at":
		ts(&r.CreatedAt)
	case "role":
		str(&r.Role)
	case "content_type":
		str(&r.ContentType)
	case "text_payload":
		str(r.TextPayload)
	case "binary_payload":
		if r.BinaryPayload == nil {
			fb.AppendNull()
		} else {
			fb.(*array.BinaryBuilder).Append(r.BinaryPayload)
		}
	case "payload_uri":
		str(r.PayloadURI)
	case "payload_size":
		if r.PayloadSize == nil {
			fb.AppendNull()
		} else {
			fb.(*array.Int64Builder).Append(*r.PayloadSize)
		}
	case "payload_checksum":
		str(r.PayloadChecksum)
	case "embedding":
		lb := fb.(*array.ListBuilder)
		if r.Embedding == nil {
			lb.AppendNull()
			return nil
		}
		lb.Append(true)
		lb.ValueBuilder().(*array.Float32Builder).AppendValues(r.Embedding, nil)
	case "state_metadata":
		if r.StateMetadata == nil {
			fb.AppendNull()
			return nil
		}
		doc, err := json.Marshal(r.StateMetadata)
		if err != nil {
			return err
		}
		s := string(doc)
		str(&s)
	case "metadata":
		if r.Metadata == nil {
			fb.AppendNull()
			return nil
		}
		s := string(r.Metadata)
		str(&s)
	case "relationships":
		lb := fb.(*array.ListBuilder)
		if len(r.Relationships) == 0 {
			lb.AppendNull()
			return nil
		}
		lb.Append(true)
		sb := lb.ValueBuilder().(*array.StructBuilder)
		for _, rel := range r.Relationships {
			sb.Append(true)
			sb.FieldBuilder(0).(*array.StringBuilder).Append(rel.TargetID)
			sb.FieldBuilder(1).(*array.StringBuilder).Append(rel.Relation)
			if rel.Weight == nil {
				sb.FieldBuilder(2).AppendNull()
			} else {
				sb.FieldBuilder(2).(*array.Float32Builder).Append(*rel.Weight)
			}
		}
	case "expires_at":
		ts(r.ExpiresAt)
	case "retention_policy":
		str(r.RetentionPolicy)
	case "lifecycle_status":
		str(&r.LifecycleStatus)
	case "retired_at":
		ts(r.RetiredAt)
	case "retired_reason":
		str(r.RetiredReason)
	case "supersedes_id":
		str(r.SupersedesID)
	case "superseded_by_id":
		str(r.SupersededByID)
	default:
		return fmt.Errorf("contexts: no record field for column %q", name)
	}
	return nil
}

// FromArrow reads records from rows of Schema or any projection of it (columns it
// does not hold stay zero). Errors name a column of the wrong type: a store whose schema is not
// the context schema.
func FromArrow(rec arrow.RecordBatch) ([]Record, error) {
	n := int(rec.NumRows())
	out := make([]Record, n)
	for c, f := range rec.Schema().Fields() {
		if err := readColumn(rec.Column(c), f.Name, out); err != nil {
			return nil, fmt.Errorf("contexts: column %s: %w", f.Name, err)
		}
	}
	return out, nil
}

// stringAt is the string at row i of a string or large string column (nil when null).
type stringAt func(i int) *string

func stringsOf(col arrow.Array) (stringAt, error) {
	switch a := col.(type) {
	case *array.String:
		return func(i int) *string {
			if a.IsNull(i) {
				return nil
			}
			s := a.Value(i)
			return &s
		}, nil
	case *array.LargeString:
		return func(i int) *string {
			if a.IsNull(i) {
				return nil
			}
			s := a.Value(i)
			return &s
		}, nil
	}
	return nil, fmt.Errorf("type %s is not a string", col.DataType())
}

func readColumn(col arrow.Array, name string, out []Record) error {
	strField := map[string]func(r *Record) **string{
		"external_id": func(r *Record) **string { return &r.ExternalID }, "bot_id": func(r *Record) **string { return &r.BotID },
		"session_id": func(r *Record) **string { return &r.SessionID }, "tenant": func(r *Record) **string { return &r.Tenant },
		"source": func(r *Record) **string { return &r.Source }, "text_payload": func(r *Record) **string { return &r.TextPayload },
		"payload_uri":      func(r *Record) **string { return &r.PayloadURI },
		"payload_checksum": func(r *Record) **string { return &r.PayloadChecksum },
		"retention_policy": func(r *Record) **string { return &r.RetentionPolicy },
		"retired_reason":   func(r *Record) **string { return &r.RetiredReason },
		"supersedes_id":    func(r *Record) **string { return &r.SupersedesID },
		"superseded_by_id": func(r *Record) **string { return &r.SupersededByID },
	}
	reqField := map[string]func(r *Record) *string{
		"id": func(r *Record) *string { return &r.ID }, "run_id": func(r *Record) *string { return &r.RunID },
		"role": func(r *Record) *string { return &r.Role }, "content_type": func(r *Record) *string { return &r.ContentType },
		"lifecycle_status": func(r *Record) *string { return &r.LifecycleStatus },
	}
	if f, ok := strField[name]; ok {
		at, err := stringsOf(col)
		if err != nil {
			return err
		}
		for i := range out {
			*f(&out[i]) = at(i)
		}
		return nil
	}
	if f, ok := reqField[name]; ok {
		at, err := stringsOf(col)
		if err != nil {
			return err
		}
		for i := range out {
			if v := at(i); v != nil {
				*f(&out[i]) = *v
			}
		}
		return nil
	}
	switch name {
	case "created_at", "expires_at", "retired_at":
		a, ok := col.(*array.Timestamp)
		if !ok {
			return fmt.Errorf("type %s is not a timestamp", col.DataType())
		}
		for i := range out {
			if a.IsNull(i) {
				continue
			}
			t := time.UnixMicro(int64(a.Value(i))).UTC()
			switch name {
			case "created_at":
				out[i].CreatedAt = t
			case "expires_at":
				out[i].ExpiresAt = &t
			default:
				out[i].RetiredAt = &t
			}
		}
	case "binary_payload":
		a, ok := col.(interface {
			IsNull(int) bool
			Value(int) []byte
		})
		if !ok {
			return fmt.Errorf("type %s is not binary", col.DataType())
		}
		for i := range out {
			if !a.IsNull(i) {
				out[i].BinaryPayload = append([]byte{}, a.Value(i)...)
			}
		}
	case "payload_size":
		a, ok := col.(*array.Int64)
		if !ok {
			return fmt.Errorf("type %s is not int64", col.DataType())
		}
		for i := range out {
			if !a.IsNull(i) {
				v := a.Value(i)
				out[i].PayloadSize = &v
			}
		}
	case "embedding":
		a, ok := col.(*array.List)
		if !ok {
			return fmt.Errorf("type %s is not a list", col.DataType())
		}
		vals, ok := a.ListValues().(*array.Float32)
		if !ok {
			return fmt.Errorf("type %s is not a list of float32", col.DataType())
		}
		for i := range out {
			if a.IsNull(i) {
				continue
			}
			start, end := a.ValueOffsets(i)
			out[i].Embedding = append(make([]float32, 0, end-start), vals.Float32Values()[start:end]...)
		}
	case "state_metadata", "metadata":
		at, err := stringsOf(col)
		if err != nil {
			return err
		}
		for i := range out {
			v := at(i)
			if v == nil {
				continue
			}
			if name == "metadata" {
				out[i].Metadata = json.RawMessage(*v)
				continue
			}
			var sm StateMetadata
			if err := json.Unmarshal([]byte(*v), &sm); err != nil {
				return err
			}
			out[i].StateMetadata = &sm
		}
	case "relationships":
		a, ok := col.(*array.List)
		if !ok {
			return fmt.Errorf("type %s is not a list", col.DataType())
		}
		st, ok := a.ListValues().(*array.Struct)
		if !ok || st.NumField() != 3 {
			return fmt.Errorf("type %s is not a list of relationships", col.DataType())
		}
		target, ok1 := st.Field(0).(*array.String)
		relation, ok2 := st.Field(1).(*array.String)
		weight, ok3 := st.Field(2).(*array.Float32)
		if !ok1 || !ok2 || !ok3 {
			return fmt.Errorf("type %s is not a list of relationships", col.DataType())
		}
		for i := range out {
			if a.IsNull(i) {
				continue
			}
			start, end := a.ValueOffsets(i)
			rels := make([]Relationship, 0, end-start)
			for j := int(start); j < int(end); j++ {
				rel := Relationship{TargetID: target.Value(j), Relation: relation.Value(j)}
				if weight.IsValid(j) {
					w := weight.Value(j)
					rel.Weight = &w
				}
				rels = append(rels, rel)
			}
			out[i].Relationships = rels
		}
	default:
		// A column this package does not read (a future column, or _seq): left alone.
	}
	return nil
}
