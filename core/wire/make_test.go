package wire

import (
	"bytes"
	cryptorand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"
)

var uuidV4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

type orderData struct {
	OrderID int    `json:"order_id"`
	Note    string `json:"note,omitempty"`
}

type marshalsArray struct{}

func (marshalsArray) MarshalJSON() ([]byte, error) { return []byte(`[1]`), nil }

type marshalsSpaced struct{}

func (marshalsSpaced) MarshalJSON() ([]byte, error) { return []byte(` { "a" : 1 } `), nil }

func TestMakeData(t *testing.T) {
	var nilMap map[string]any
	var nilPtr *orderData
	tests := []struct {
		name string
		data any
		want string // the data JSON, or "" for ErrInvalidData
	}{
		{"nil", nil, `{}`},
		{"nil map", nilMap, `{}`},
		{"nil pointer", nilPtr, `{}`},
		{"nil raw message", json.RawMessage(nil), `{}`},
		{"nil bytes", []byte(nil), `{}`},
		{"map", map[string]any{"b": 2, "a": "x"}, `{"a":"x","b":2}`},
		{"map no html escaping", map[string]string{"h": "<b>&</b>"}, `{"h":"<b>&</b>"}`},
		{"struct", orderData{OrderID: 7}, `{"order_id":7}`},
		{"struct pointer", &orderData{OrderID: 8, Note: "n"}, `{"order_id":8,"note":"n"}`},
		{"raw message", json.RawMessage(`{"big":12345678901234567890}`), `{"big":12345678901234567890}`},
		{"raw bytes compacted", []byte(" {\n \"a\" : [1, 2],\t\"s\":\"x y\" } "), `{"a":[1,2],"s":"x y"}`},
		{"json.Number kept", map[string]any{"n": json.Number("12345678901234567890")}, `{"n":12345678901234567890}`},
		{"marshaler compacted", marshalsSpaced{}, `{"a":1}`},
		{"empty map", map[string]int{}, `{}`},

		{"string", "x", ""},
		{"json text in a string", `{"a":1}`, ""},
		{"int", 5, ""},
		{"slice", []int{1}, ""},
		{"raw array", json.RawMessage(`[1]`), ""},
		{"raw invalid", []byte(`{"a":}`), ""},
		{"raw empty", []byte{}, ""},
		{"raw invalid utf8", []byte("{\"a\":\"\xff\"}"), ""},
		{"raw trailing data", []byte(`{} {}`), ""},
		{"marshaler array", marshalsArray{}, ""},
		{"unsupported", map[string]any{"c": make(chan int)}, ""},
		{"NaN", map[string]float64{"x": math.NaN()}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, err := Make("urn:t", tt.data)
			if tt.want == "" {
				if !errors.Is(err, ErrInvalidData) {
					t.Fatalf("Make err = %v, want ErrInvalidData", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := string(env.Data()); got != tt.want {
				t.Fatalf("Data() = %s, want %s", got, tt.want)
			}
			out, err := env.Encode()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Decode(out); err != nil {
				t.Fatalf("Decode(Encode(Make)) = %v (%s)", err, out)
			}
		})
	}
}

func TestMakeDefaults(t *testing.T) {
	before := time.Now().UnixMilli()
	env, err := Make("urn:t", nil)
	after := time.Now().UnixMilli()
	if err != nil {
		t.Fatal(err)
	}
	if !uuidV4.MatchString(env.Meta.ID) || !uuidV4.MatchString(env.TraceID) || env.Meta.ID == env.TraceID {
		t.Fatalf("ids: id %q trace %q", env.Meta.ID, env.TraceID)
	}
	if env.Meta.Lang != "go" || env.Meta.SchemaVersion != 1 || env.Attempts != 0 || env.Meta.Queue != "" || env.DeadLetter != nil {
		t.Fatalf("defaults: %+v", env)
	}
	if env.Meta.CreatedAt < before || env.Meta.CreatedAt > after {
		t.Fatalf("created_at %d not in [%d, %d]", env.Meta.CreatedAt, before, after)
	}
	if env.Raw() != nil {
		t.Fatal("Raw() of a made envelope must be nil")
	}
}

func TestMakeOptions(t *testing.T) {
	at := time.Date(2025, 6, 5, 14, 12, 7, 999_999_999, time.FixedZone("x", 3600))
	env, err := Make("urn:t", nil, WithQueue("orders"), WithTraceID("trace-9"), WithID("id-9"), WithCreatedAt(at), nil)
	if err != nil {
		t.Fatal(err)
	}
	if env.TraceID != "trace-9" || env.Meta.ID != "id-9" || env.Meta.Queue != "orders" || env.Meta.CreatedAt != at.UnixMilli() {
		t.Fatalf("options not applied: %+v", env)
	}
	// Blank values fall back to the defaults.
	env, err = Make("urn:t", nil, WithTraceID(" "), WithID(""), WithCreatedAt(time.Time{}))
	if err != nil {
		t.Fatal(err)
	}
	if !uuidV4.MatchString(env.TraceID) || !uuidV4.MatchString(env.Meta.ID) || env.Meta.CreatedAt == 0 {
		t.Fatalf("blank options: %+v", env)
	}
}

func TestMakeRejectsBlankJob(t *testing.T) {
	for _, job := range []string{"", " ", "\t\r\n\v\f"} {
		if _, err := Make(job, nil); !errors.Is(err, ErrInvalidEnvelope) {
			t.Fatalf("Make(%q) err = %v, want ErrInvalidEnvelope", job, err)
		}
	}
	if _, err := Make("\u00a0", nil); err != nil {
		t.Fatalf("NBSP is not blank: %v", err)
	}
}

func TestNewIDUnique(t *testing.T) {
	seen := make(map[string]bool)
	for range 1000 {
		id := NewID()
		if !uuidV4.MatchString(id) {
			t.Fatalf("NewID() = %q, not a UUID v4", id)
		}
		if seen[id] {
			t.Fatalf("duplicate id %q", id)
		}
		seen[id] = true
	}
}

// TestMakeIDPair: the trace id and meta.id Make mints are two different
// canonical v4 UUIDs, also across envelopes.
func TestMakeIDPair(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 500; i++ {
		e, err := Make("urn:a:b:c", nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{e.TraceID, e.Meta.ID} {
			if len(id) != 36 || id[14] != '4' || seen[id] {
				t.Fatalf("id %q: not a fresh v4 UUID", id)
			}
			seen[id] = true
		}
	}
}

func TestFormatUUIDv4(t *testing.T) {
	var u [16]byte
	for i := range u {
		u[i] = 0xff
	}
	format := func(u [16]byte) string {
		var s [36]byte
		formatUUIDv4(&s, u)
		return string(s[:])
	}
	if got := format(u); got != "ffffffff-ffff-4fff-bfff-ffffffffffff" {
		t.Fatalf("formatUUIDv4(ff..) = %s", got)
	}
	if got := format([16]byte{}); got != "00000000-0000-4000-8000-000000000000" {
		t.Fatalf("formatUUIDv4(00..) = %s", got)
	}
}

// encodingJSON encodes v with encoding/json, HTML escaping off, and then
// writes its \u2028 and \u2029 escapes raw, as the SDKs do.
func encodingJSON(v any) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return string(appendUnescapedSeparators(nil, bytes.TrimSuffix(buf.Bytes(), []byte("\n")))), nil
}

func TestFastDataEncoderMatchesEncodingJSON(t *testing.T) {
	cyclic := map[string]any{}
	cyclic["self"] = cyclic
	values := []any{
		nil, true, false, "", "s <&> \"q\" \u2028 \xff", json.Number("12345678901234567890"), json.Number("-1.5e+3"),
		json.Number(""), json.Number("1x"), json.Number("01"),
		0, -1, int8(-8), int16(16), int32(-32), int64(math.MaxInt64), uint(1), uint8(8), uint16(16), uint32(32), uint64(math.MaxUint64),
		0.0, math.Copysign(0, -1), 0.1, 1.5, -2.25, 1e20, 1e21, 123456789e15, 1e-6, 1e-7, 9.999e-7, 5e-324, math.MaxFloat64, 1e100, -1e-10,
		float32(0.1), float32(1e21), float32(1e-7), float32(3.4e38), math.NaN(), math.Inf(1), float32(math.Inf(-1)),
		map[string]any{}, map[string]any{"b": 1, "a": []any{1, "x", nil, map[string]any{"z": true, "é": 2}}, "": "empty"},
		map[string]string{"k2": "v", "k1": "<>"}, []any{}, []string{"a", "b"}, []string(nil), []any(nil), map[string]any(nil),
		map[string]any{"t": time.Unix(0, 0).UTC()}, // not handled: falls back
		map[string]any{"c": make(chan int)},
		cyclic,
	}
	handled := 0
	for _, v := range values {
		want, werr := encodingJSON(v)
		got, ok := appendDataValue(nil, v, 0)
		if !ok {
			continue // the fallback (encoding/json itself) handles it
		}
		handled++
		if werr != nil {
			t.Errorf("fast path encoded %#v as %s, encoding/json fails: %v", v, got, werr)
			continue
		}
		if string(got) != want {
			t.Errorf("fast path %#v = %s, encoding/json = %s", v, got, want)
		}
	}
	if handled < len(values)-12 {
		t.Errorf("the fast path handled only %d of %d values", handled, len(values))
	}
	// Through Make, whichever path runs, data equals encoding/json's output.
	for _, v := range values {
		if _, isMap := v.(map[string]any); !isMap {
			continue
		}
		want, werr := encodingJSON(v)
		env, err := Make("urn:t", v)
		if werr != nil {
			if !errors.Is(err, ErrInvalidData) {
				t.Errorf("Make(%T) err = %v, want ErrInvalidData (encoding/json: %v)", v, err, werr)
			}
			continue
		}
		if err != nil {
			t.Errorf("Make: %v", err)
			continue
		}
		if v.(map[string]any) == nil {
			want = "{}"
		}
		if got := string(env.Data()); got != want {
			t.Errorf("Make data = %s, want %s", got, want)
		}
	}
}

func FuzzFastDataEncoder(f *testing.F) {
	for _, s := range []string{`{"a":1.5,"b":[1e21,1e-7,"x<"],"c":{"d":null}}`, `{"n":12345678901234567890}`, `{"f":-0.0000001234}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var v any
		if json.Unmarshal(b, &v) != nil {
			return
		}
		want, werr := encodingJSON(v)
		got, ok := appendDataValue(nil, v, 0)
		if ok && (werr != nil || string(got) != want) {
			t.Fatalf("fast path = %s, encoding/json = %s (%v)", got, want, werr)
		}
	})
}

// TestFormatUUIDv4ByteOrder checks every byte lands at its place, against
// a plain hex encoding with the dashes inserted.
func TestFormatUUIDv4ByteOrder(t *testing.T) {
	u := [16]byte{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0x10, 0x32, 0x54, 0x76, 0x98, 0xba, 0xdc, 0xfe}
	var s [36]byte
	formatUUIDv4(&s, u)
	if got, want := string(s[:]), "01234567-89ab-4def-9032-547698badcfe"; got != want {
		t.Fatalf("formatUUIDv4 = %s, want %s", got, want)
	}
}

// TestNewIDsAcrossBlockEnds draws single ids and pairs in an order that
// leaves 16 bytes at the end of a block, and checks every id is a fresh v4.
func TestNewIDsAcrossBlockEnds(t *testing.T) {
	seen := map[string]bool{}
	check := func(id string) {
		if len(id) != 36 || id[14] != '4' || !strings.ContainsRune("89ab", rune(id[19])) || seen[id] {
			t.Fatalf("bad or repeated id %q", id)
		}
		seen[id] = true
	}
	for i := range 500 {
		if i%3 == 0 {
			check(NewID())
			continue
		}
		a, b := newIDPair()
		check(a)
		check(b)
	}
}

// TestFormatUUIDv4MatchesHexEncoding compares random UUIDs with
// encoding/hex plus the dashes.
func TestFormatUUIDv4MatchesHexEncoding(t *testing.T) {
	for i := range 2000 {
		var u [16]byte
		for j := range u {
			u[j] = byte(i*31 + j*97 + (i>>3)*j)
		}
		if i%2 == 0 {
			_, _ = cryptorand.Read(u[:])
		}
		v := u
		v[6] = v[6]&0x0f | 0x40
		v[8] = v[8]&0x3f | 0x80
		h := hex.EncodeToString(v[:])
		want := h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
		var s [36]byte
		formatUUIDv4(&s, u)
		if string(s[:]) != want {
			t.Fatalf("formatUUIDv4(%x) = %s, want %s", u, s[:], want)
		}
	}
}
