package brokertest

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// PulsarPartitionedTopic creates topic in public/default with partitions
// partitions through the admin API of PulsarAdminURL, failing the test on
// any error or non-2xx answer.
func PulsarPartitionedTopic(t testing.TB, topic string, partitions int) {
	t.Helper()
	u := PulsarAdminURL(t) + "/admin/v2/persistent/public/default/" + topic + "/partitions"
	req, err := http.NewRequest(http.MethodPut, u, strings.NewReader(strconv.Itoa(partitions)))
	if err != nil {
		t.Fatalf("brokertest: create partitioned %s: %v", topic, err)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("brokertest: create partitioned %s: %v", topic, err)
		return
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("brokertest: create partitioned %s: %s", topic, resp.Status)
	}
}
