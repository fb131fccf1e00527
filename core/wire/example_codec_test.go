package wire_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/babelqueue/babelqueue-go/core/wire"
)

func ExampleMake() {
	env, err := wire.Make("urn:babel:orders:created", map[string]any{"order_id": 1042},
		wire.WithQueue("orders"),
		wire.WithTraceID("4bf92f35-77b3-4da6-a3ce-929d0e0e4736"),
		wire.WithID("9b2f4c1e-0d3a-4e5b-8c7d-6f1a2b3c4d5e"),
		wire.WithCreatedAt(time.UnixMilli(1749132727000)))
	if err != nil {
		fmt.Println(err)
		return
	}
	body, err := env.Encode()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(body))
	// Output:
	// {"job":"urn:babel:orders:created","trace_id":"4bf92f35-77b3-4da6-a3ce-929d0e0e4736","data":{"order_id":1042},"meta":{"id":"9b2f4c1e-0d3a-4e5b-8c7d-6f1a2b3c4d5e","queue":"orders","lang":"go","schema_version":1,"created_at":1749132727000},"attempts":0}
}

func ExampleDecode() {
	// A body written by another SDK, with the urn alias, an unknown key and
	// an integer too large for a float64.
	body := []byte(`{"urn":"urn:babel:orders:created","trace_id":"t-1","data":{"ref":12345678901234567890},` +
		`"meta":{"id":"m-1","queue":"orders","lang":"python","schema_version":1,"created_at":1749132727000},"attempts":1,"tenant":"eu"}`)
	env, err := wire.Decode(body)
	if err != nil {
		fmt.Println(err)
		return
	}
	data, err := env.DataMap()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(env.URN(), env.TraceID, env.Meta.Lang, env.Attempts, data["ref"])

	// Re-encoding after a change rewrites only that value.
	env.Attempts = 2
	out, _ := env.Encode()
	fmt.Println(string(out))
	// Output:
	// urn:babel:orders:created t-1 python 1 12345678901234567890
	// {"urn":"urn:babel:orders:created","trace_id":"t-1","data":{"ref":12345678901234567890},"meta":{"id":"m-1","queue":"orders","lang":"python","schema_version":1,"created_at":1749132727000},"attempts":2,"tenant":"eu"}
}

func ExampleDecode_rejected() {
	for _, body := range []string{
		`not json`,
		`{"job":"u","trace_id":"t","data":{},"meta":{"schema_version":1},"attempts":-1}`,
		`{"job":"u","trace_id":"t","data":{},"meta":{"schema_version":2},"attempts":0}`,
	} {
		_, err := wire.Decode([]byte(body))
		fmt.Println(errors.Is(err, wire.ErrPoison), errors.Is(err, wire.ErrUnsupportedSchemaVersion))
	}
	// Output:
	// true false
	// true false
	// false true
}

func ExampleEnvelope_BindData() {
	env, err := wire.Decode([]byte(`{"job":"urn:babel:orders:created","trace_id":"t","data":{"order_id":1042,"note":"<fragile>"},"meta":{"schema_version":1},"attempts":0}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	var order struct {
		OrderID int    `json:"order_id"`
		Note    string `json:"note"`
	}
	if err := env.BindData(&order); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(order.OrderID, order.Note)
	// Output: 1042 <fragile>
}

func ExampleSetAttempts() {
	body := []byte(`{ "job": "urn:a", "attempts": 0, "trace_id": "t" }`)
	out, err := wire.SetAttempts(body, 3)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(out))
	// Output: { "job": "urn:a", "attempts": 3, "trace_id": "t" }
}

func ExampleAnnotateDeadLetter() {
	body := []byte(`{"job":"urn:a","trace_id":"t","data":{},"meta":{"schema_version":1},"attempts":2}`)
	msg := "payment declined"
	out, err := wire.AnnotateDeadLetter(body, wire.DeadLetter{
		Reason: wire.ReasonFailed, Error: &msg, FailedAt: 1749132727000, OriginalQueue: "orders", Attempts: 3,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(out))
	back, _ := wire.ClearDeadLetter(out)
	fmt.Println(string(back))
	// Output:
	// {"job":"urn:a","trace_id":"t","data":{},"meta":{"schema_version":1},"attempts":3,"dead_letter":{"reason":"failed","error":"payment declined","exception":null,"failed_at":1749132727000,"original_queue":"orders","attempts":3,"lang":"go"}}
	// {"job":"urn:a","trace_id":"t","data":{},"meta":{"schema_version":1},"attempts":0}
}

func ExamplePoisonBody() {
	dl := wire.DeadLetter{FailedAt: 1, OriginalQueue: "orders", Attempts: 1}
	fmt.Println(string(wire.PoisonBody([]byte(`oops`), dl)))
	fmt.Println(string(wire.PoisonBody([]byte("\xff\x00"), dl)))
	// Output:
	// {"raw":"oops","dead_letter":{"reason":"poison","error":null,"exception":null,"failed_at":1,"original_queue":"orders","attempts":1,"lang":"go"}}
	// {"raw":"/wA=","raw_encoding":"base64","dead_letter":{"reason":"poison","error":null,"exception":null,"failed_at":1,"original_queue":"orders","attempts":1,"lang":"go"}}
}

func ExampleProjectBody() {
	body := []byte(`{"job":"urn:a","trace_id":"t-1","data":{},"meta":{"id":"m-1","lang":"go","schema_version":1},"attempts":2}`)
	for _, h := range wire.ProjectBody(body).Headers() {
		fmt.Printf("%s=%s\n", h.Key, h.Value)
	}
	// Output:
	// bq-job=urn:a
	// bq-trace-id=t-1
	// bq-message-id=m-1
	// bq-schema-version=1
	// bq-source-lang=go
	// bq-attempts=2
}

func ExampleCheckSchemaVersionHeader() {
	for _, v := range []string{"1", "", "2", " 1"} {
		fmt.Printf("%q: %v\n", v, wire.CheckSchemaVersionHeader(v, true))
	}
	// Output:
	// "1": <nil>
	// "": <nil>
	// "2": babelqueue: unsupported schema version: header schema version "2" (supported: 1)
	// " 1": babelqueue: unsupported schema version: header schema version " 1" (supported: 1)
}
