package testmsg

import "testing"

func TestBodyDecodesWithItsAttempts(t *testing.T) {
	env := Decode(t, Body(t, "urn:babel:orders:created", 2))
	if env.Job != "urn:babel:orders:created" || env.Attempts != 2 || env.Meta.Queue != "orders" {
		t.Fatalf("decoded %+v, want the URN, attempts 2 and queue orders", env)
	}
}
