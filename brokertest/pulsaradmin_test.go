package brokertest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestPulsarPartitionedTopicPutsThePartitionCount checks the request the
// admin API receives, and that a refusal fails the test.
func TestPulsarPartitionedTopicPutsThePartitionCount(t *testing.T) {
	var method, path, body, ctype string
	status := http.StatusNoContent
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		method, path, body, ctype = r.Method, r.URL.Path, string(b), r.Header.Get("Content-Type")
		w.WriteHeader(status)
	}))
	defer srv.Close()
	t.Setenv(EnvPulsarAdminURL, srv.URL)
	if f := run("T", func(tb testing.TB) { PulsarPartitionedTopic(tb, "orders", 3) }); f.fatal != "" {
		t.Fatalf("PulsarPartitionedTopic failed: %s", f.fatal)
	}
	if method != http.MethodPut || path != "/admin/v2/persistent/public/default/orders/partitions" || body != "3" || ctype != "application/json" {
		t.Errorf("admin got %s %s %q (%s)", method, path, body, ctype)
	}
	status = http.StatusConflict
	if f := run("T", func(tb testing.TB) { PulsarPartitionedTopic(tb, "orders", 3) }); !strings.Contains(f.fatal, "409") {
		t.Errorf("a 409 answer gave fatal %q, want the status named", f.fatal)
	}
}
