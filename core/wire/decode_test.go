package wire

import (
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

const validBody = `{"job":"urn:babel:orders:created","trace_id":"t-1","data":{"order_id":1042},` +
	`"meta":{"id":"m-1","queue":"orders","lang":"php","schema_version":1,"created_at":1749132727000},"attempts":0}`

func TestDecodeAcceptanceRule(t *testing.T) {
	const (
		ok     = "accepted"
		poison = "poison"
		gated  = "version"
	)
	frame := func(job, trace, data, meta, attempts string) string {
		var parts []string
		if job != "" {
			parts = append(parts, `"job":`+job)
		}
		if trace != "" {
			parts = append(parts, `"trace_id":`+trace)
		}
		if data != "" {
			parts = append(parts, `"data":`+data)
		}
		if meta != "" {
			parts = append(parts, `"meta":`+meta)
		}
		if attempts != "" {
			parts = append(parts, `"attempts":`+attempts)
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	m1 := `{"schema_version":1}`
	tests := []struct {
		name, body, want string
	}{
		{"canonical", validBody, ok},
		{"minimal", frame(`"u"`, `"t"`, `{}`, m1, `0`), ok},
		{"surrounding whitespace", " \n\t" + frame(`"u"`, `"t"`, `{}`, m1, `0`) + "\r\n ", ok},
		{"urn alias", `{"urn":"u","trace_id":"t","data":{},"meta":{"schema_version":1},"attempts":0}`, ok},
		{"attempts large", frame(`"u"`, `"t"`, `{}`, m1, `2147483647`), ok},
		{"escaped job", frame(`"\u0075rn"`, `"t"`, `{}`, m1, `0`), ok},
		{"job with nbsp only is not blank", frame(`"\u00a0"`, `"t"`, `{}`, m1, `0`), ok},
		{"job U+3000 raw", frame(`"　"`, `"t"`, `{}`, m1, `0`), ok},
		{"meta fields of other types kept", frame(`"u"`, `"t"`, `{}`, `{"schema_version":1,"id":5,"queue":null,"created_at":"x"}`, `0`), ok},

		{"empty body", ``, poison},
		{"whitespace body", "  \n", poison},
		{"not json", `hello`, poison},
		{"array", `[1,2]`, poison},
		{"string", `"x"`, poison},
		{"null", `null`, poison},
		{"number", `12`, poison},
		{"truncated", validBody[:len(validBody)-1], poison},
		{"trailing garbage", validBody + `x`, poison},
		{"two objects", validBody + validBody, poison},
		{"trailing comma", `{"job":"u","trace_id":"t","data":{},"meta":{"schema_version":1},"attempts":0,}`, poison},
		{"single quotes", `{'job':'u'}`, poison},
		{"invalid utf8 in string", frame("\"u\xff\"", `"t"`, `{}`, m1, `0`), poison},
		{"invalid utf8 in data", frame(`"u"`, `"t"`, "{\"a\":\"\xc3\"}", m1, `0`), poison},
		{"control char in string", frame("\"u\x01\"", `"t"`, `{}`, m1, `0`), poison},
		{"bad escape", frame(`"u\x"`, `"t"`, `{}`, m1, `0`), poison},
		{"BOM prefix", "\uFEFF" + validBody, poison},
		{"missing job", frame(``, `"t"`, `{}`, m1, `0`), poison},
		{"blank job", frame(`" \t\n\v\f\r"`, `"t"`, `{}`, m1, `0`), poison},
		{"escaped blank job", frame(`"\u0020\t"`, `"t"`, `{}`, m1, `0`), poison},
		{"empty job", frame(`""`, `"t"`, `{}`, m1, `0`), poison},
		{"job number", frame(`1`, `"t"`, `{}`, m1, `0`), poison},
		{"job null", frame(`null`, `"t"`, `{}`, m1, `0`), poison},
		{"missing trace", frame(`"u"`, ``, `{}`, m1, `0`), poison},
		{"blank trace", frame(`"u"`, `"  "`, `{}`, m1, `0`), poison},
		{"trace number", frame(`"u"`, `7`, `{}`, m1, `0`), poison},
		{"missing data", frame(`"u"`, `"t"`, ``, m1, `0`), poison},
		{"data array", frame(`"u"`, `"t"`, `[]`, m1, `0`), poison},
		{"data null", frame(`"u"`, `"t"`, `null`, m1, `0`), poison},
		{"data string", frame(`"u"`, `"t"`, `"{}"`, m1, `0`), poison},
		{"missing meta", frame(`"u"`, `"t"`, `{}`, ``, `0`), poison},
		{"meta array", frame(`"u"`, `"t"`, `{}`, `[1]`, `0`), poison},
		{"meta without schema_version", frame(`"u"`, `"t"`, `{}`, `{"id":"x"}`, `0`), poison},
		{"missing attempts", frame(`"u"`, `"t"`, `{}`, m1, ``), poison},
		{"attempts fraction", frame(`"u"`, `"t"`, `{}`, m1, `1.5`), poison},
		{"attempts 1.0", frame(`"u"`, `"t"`, `{}`, m1, `1.0`), poison},
		{"attempts negative", frame(`"u"`, `"t"`, `{}`, m1, `-1`), poison},
		{"attempts minus zero", frame(`"u"`, `"t"`, `{}`, m1, `-0`), poison},
		{"attempts string", frame(`"u"`, `"t"`, `{}`, m1, `"1"`), poison},
		{"attempts exponent", frame(`"u"`, `"t"`, `{}`, m1, `1e2`), poison},
		{"attempts leading zero", frame(`"u"`, `"t"`, `{}`, m1, `01`), poison},
		{"attempts null", frame(`"u"`, `"t"`, `{}`, m1, `null`), poison},
		{"attempts too large", frame(`"u"`, `"t"`, `{}`, m1, `2147483648`), poison},
		{"nesting too deep", frame(`"u"`, `"t"`, `{"a":`+strings.Repeat("[", 10001)+strings.Repeat("]", 10001)+`}`, m1, `0`), poison},

		{"schema_version 2", frame(`"u"`, `"t"`, `{}`, `{"schema_version":2}`, `0`), gated},
		{"schema_version 0", frame(`"u"`, `"t"`, `{}`, `{"schema_version":0}`, `0`), gated},
		{"schema_version 1.0", frame(`"u"`, `"t"`, `{}`, `{"schema_version":1.0}`, `0`), gated},
		{"schema_version string", frame(`"u"`, `"t"`, `{}`, `{"schema_version":"1"}`, `0`), gated},
		{"schema_version null", frame(`"u"`, `"t"`, `{}`, `{"schema_version":null}`, `0`), gated},
		{"schema_version 2 wins over missing job", `{"meta":{"schema_version":2}}`, gated},
		{"duplicate schema_version last wins (gated)", frame(`"u"`, `"t"`, `{}`, `{"schema_version":1,"schema_version":2}`, `0`), gated},
		{"duplicate schema_version last wins (ok)", frame(`"u"`, `"t"`, `{}`, `{"schema_version":2,"schema_version":1}`, `0`), ok},
		{"invalid json is poison even with version 2", `{"meta":{"schema_version":2}`, poison},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, err := Decode([]byte(tt.body))
			aerr := Accepts([]byte(tt.body))
			if (err == nil) != (aerr == nil) || (err != nil && err.Error() != aerr.Error()) {
				t.Fatalf("Decode err %v, Accepts err %v: must agree", err, aerr)
			}
			switch tt.want {
			case ok:
				if err != nil {
					t.Fatalf("Decode: %v, want accepted", err)
				}
				if env == nil {
					t.Fatal("nil envelope")
				}
			case poison:
				if !errors.Is(err, ErrPoison) || errors.Is(err, ErrUnsupportedSchemaVersion) {
					t.Fatalf("Decode err = %v, want ErrPoison only", err)
				}
			case gated:
				var sv *SchemaVersionError
				if !errors.Is(err, ErrUnsupportedSchemaVersion) || errors.Is(err, ErrPoison) || !errors.As(err, &sv) {
					t.Fatalf("Decode err = %v, want *SchemaVersionError only", err)
				}
				if sv.Source != "body" || sv.Version == "" || !strings.Contains(err.Error(), strconv.Quote(sv.Version)) {
					t.Fatalf("SchemaVersionError = %+v (%v)", sv, err)
				}
			}
		})
	}
}

func TestDecodeFields(t *testing.T) {
	env, err := Decode([]byte(validBody))
	if err != nil {
		t.Fatal(err)
	}
	want := Meta{ID: "m-1", Queue: "orders", Lang: "php", SchemaVersion: 1, CreatedAt: 1749132727000}
	if env.Job != "urn:babel:orders:created" || env.URN() != env.Job || env.TraceID != "t-1" || env.Attempts != 0 || env.Meta != want {
		t.Fatalf("decoded %+v", env)
	}
	if env.DeadLetter != nil {
		t.Fatalf("DeadLetter = %+v, want nil", env.DeadLetter)
	}
	if got := string(env.Data()); got != `{"order_id":1042}` {
		t.Fatalf("Data() = %s", got)
	}
	if got := string(env.Raw()); got != validBody {
		t.Fatalf("Raw() = %s", got)
	}
}

func TestDecodeEscapedStrings(t *testing.T) {
	body := `{"job":"urn:a\/b\u00e9","trace_id":"t\"1","data":{},"meta":{"schema_version":1,"queue":"q\n","id":"\ud83d\ude00"},"attempts":3}`
	env, err := Decode([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if env.Job != "urn:a/bé" || env.TraceID != `t"1` || env.Meta.Queue != "q\n" || env.Meta.ID != "😀" || env.Attempts != 3 {
		t.Fatalf("decoded %+v", env)
	}
}

func TestDecodeURNAlias(t *testing.T) {
	tests := []struct {
		name, body, want, key string
	}{
		{"urn only", `{"urn":"A","trace_id":"t","data":{},"meta":{"schema_version":1},"attempts":0}`, "A", "urn"},
		{"job wins", `{"urn":"A","job":"B","trace_id":"t","data":{},"meta":{"schema_version":1},"attempts":0}`, "B", "job"},
		{"blank job falls back to urn", `{"job":" ","urn":"A","trace_id":"t","data":{},"meta":{"schema_version":1},"attempts":0}`, "A", "urn"},
		{"null job falls back to urn", `{"job":null,"urn":"A","trace_id":"t","data":{},"meta":{"schema_version":1},"attempts":0}`, "A", "urn"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, err := Decode([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			_, jobKey, err := env.original()
			if err != nil || env.Job != tt.want || jobKey != tt.key {
				t.Fatalf("Job = %q under %q (%v), want %q under %q", env.Job, jobKey, err, tt.want, tt.key)
			}
			// Re-encoding an unchanged alias body keeps its bytes; changing Job
			// rewrites the key it came from.
			out, err := env.Encode()
			if err != nil || string(out) != tt.body {
				t.Fatalf("Encode = %s, %v", out, err)
			}
			env.Job = "C"
			out, err = env.Encode()
			if err != nil {
				t.Fatal(err)
			}
			again, err := Decode(out)
			if err != nil || again.Job != "C" {
				t.Fatalf("after change: %s → %+v, %v", out, again, err)
			}
		})
	}
}

func TestDecodeDuplicateKeysLastWins(t *testing.T) {
	body := `{"job":"first","job":"second","trace_id":"t","data":{"a":1},"data":{"b":2},"meta":{"schema_version":1,"queue":"q1","queue":"q2"},"attempts":5,"attempts":1}`
	env, err := Decode([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if env.Job != "second" || string(env.Data()) != `{"b":2}` || env.Meta.Queue != "q2" || env.Attempts != 1 {
		t.Fatalf("decoded %+v data %s", env, env.Data())
	}
	// encoding/json agrees on every field.
	var ref struct {
		Job      string          `json:"job"`
		Data     json.RawMessage `json:"data"`
		Attempts int             `json:"attempts"`
	}
	if err := json.Unmarshal([]byte(body), &ref); err != nil {
		t.Fatal(err)
	}
	if ref.Job != env.Job || string(ref.Data) != string(env.Data()) || ref.Attempts != env.Attempts {
		t.Fatalf("encoding/json reads %+v", ref)
	}
	// A blank last job is poison even though an earlier one was valid.
	bad := strings.Replace(body, `"job":"second"`, `"job":""`, 1)
	if _, err := Decode([]byte(bad)); !errors.Is(err, ErrPoison) {
		t.Fatalf("Decode(%s) err = %v, want poison", bad, err)
	}
}

func TestDecodeDeadLetterBlock(t *testing.T) {
	body := `{"job":"u","trace_id":"t","data":{},"meta":{"schema_version":1},"attempts":3,` +
		`"dead_letter":{"reason":"failed","error":"boom","exception":null,"failed_at":1700000000000,"original_queue":"orders","attempts":3,"lang":"python","hint":"x"}}`
	env, err := Decode([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	dl := env.DeadLetter
	if dl == nil || dl.Reason != "failed" || dl.Error == nil || *dl.Error != "boom" || dl.Exception != nil ||
		dl.FailedAt != 1700000000000 || dl.OriginalQueue != "orders" || dl.Attempts != 3 || dl.Lang != "python" {
		t.Fatalf("DeadLetter = %+v", dl)
	}
}

func TestDataMapKeepsBigIntegers(t *testing.T) {
	body := `{"job":"u","trace_id":"t","data":{"big":12345678901234567890,"f":1.5,"s":"x","n":{"a":[1,2]}},"meta":{"schema_version":1},"attempts":0}`
	env, err := Decode([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	m, err := env.DataMap()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"big": json.Number("12345678901234567890"),
		"f":   json.Number("1.5"),
		"s":   "x",
		"n":   map[string]any{"a": []any{json.Number("1"), json.Number("2")}},
	}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("DataMap = %#v", m)
	}
	out, err := env.Encode()
	if err != nil || !strings.Contains(string(out), `"big":12345678901234567890`) {
		t.Fatalf("Encode = %s, %v", out, err)
	}
}

func TestBindData(t *testing.T) {
	env, err := Decode([]byte(validBody))
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		OrderID int `json:"order_id"`
	}
	if err := env.BindData(&v); err != nil || v.OrderID != 1042 {
		t.Fatalf("BindData = %+v, %v", v, err)
	}
	var wrong struct {
		OrderID string `json:"order_id"`
	}
	if err := env.BindData(&wrong); err == nil {
		t.Fatal("BindData into a mismatched type: want error")
	}
	// Data() is a copy: changing it does not change the envelope.
	d := env.Data()
	d[2] = 'X'
	if string(env.Data()) != `{"order_id":1042}` {
		t.Fatal("Data() aliases the envelope")
	}
}

func TestDecodeDoesNotAliasInput(t *testing.T) {
	body := []byte(validBody)
	env, err := Decode(body)
	if err != nil {
		t.Fatal(err)
	}
	for i := range body {
		body[i] = ' '
	}
	if env.Job != "urn:babel:orders:created" || string(env.Raw()) != validBody {
		t.Fatalf("envelope changed with the input buffer: %+v", env)
	}
}

func TestDecodeEscapedKeys(t *testing.T) {
	body := `{"j\u006fb":"u","trace\u005fid":"t","d\u0061ta":{"k":1},"m\u0065ta":{"schema\u005fversion":1,"\u0071ueue":"q"},"\u0061ttempts":2}`
	env, err := Decode([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if env.Job != "u" || env.TraceID != "t" || string(env.Data()) != `{"k":1}` || env.Meta.Queue != "q" || env.Attempts != 2 {
		t.Fatalf("decoded %+v", env)
	}
	// The editors find escaped keys too, and keep their spelling.
	env.Attempts = 5
	out, err := env.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Replace(body, `"\u0061ttempts":2`, `"\u0061ttempts":5`, 1); string(out) != want {
		t.Fatalf("Encode = %s", out)
	}
	p := ProjectBody([]byte(body))
	if p.Job != "u" || p.TraceID != "t" || p.SchemaVersion != "1" || p.Attempts != "2" {
		t.Fatalf("ProjectBody = %+v", p)
	}
}

// decodeString (the App's delivery path) must read every body exactly as
// Decode does.
func TestDecodeStringMatchesDecode(t *testing.T) {
	bodies := []string{
		``, `[]`, `{"job":"urn:a"}`,
		`{"job":"urn:a","trace_id":"t","data":{"k":"v\u00e9"},"meta":{"id":"i","queue":"q","lang":"go","schema_version":1,"created_at":5},"attempts":2}`,
		`{"urn":"urn:a","trace_id":"t","data":{},"meta":{"schema_version":1},"attempts":0,"dead_letter":{"reason":"failed","error":"x\"y","exception":null,"failed_at":7,"original_queue":"q","attempts":3,"lang":"go"}}`,
		`{"job":"urn:a","trace_id":"t","data":{},"meta":{"schema_version":2},"attempts":0}`,
	}
	for _, b := range bodies {
		want, werr := Decode([]byte(b))
		got, gerr := decodeString(b)
		if (werr == nil) != (gerr == nil) || (werr != nil && werr.Error() != gerr.Error()) {
			t.Errorf("%s: decodeString error %v, Decode error %v", b, gerr, werr)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: decodeString = %+v, Decode = %+v", b, got, want)
		}
	}
}
