package modgraph

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestReleasePlan(t *testing.T) {
	mods := []Module{
		mod("core"),
		mod("brokertest"),
		mod("conformance", "core"),
		mod("kafka", "brokertest", "conformance", "core"),
		mod("otel", "core", "kafka"),
		mod("examples/orderstatus", "core"),
		mod("otel/integration", "core", "kafka", "otel"),
		mod("interop", "brokertest", "core", "kafka"),
	}
	none := func(string) bool { return false }
	got, err := ReleasePlan(mods, Releasable(mods), none)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"brokertest/v0.1.0", "core/v0.1.0", "conformance/v0.1.0", "kafka/v0.1.0", "otel/v0.1.0"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("plan = %v, want %v", got, want)
	}

	// kafka alone, with its siblings untagged: they must move together.
	_, err = ReleasePlan(mods, []string{"kafka"}, none)
	if !errors.Is(err, ErrRelease) || !strings.Contains(err.Error(), "kafka requires core v0.1.0") || !strings.Contains(err.Error(), "kafka requires brokertest v0.1.0") {
		t.Fatalf("untagged siblings not reported: %v", err)
	}

	// kafka alone once its siblings are tagged.
	tagged := func(tag string) bool { return tag != "kafka/v0.1.0" && tag != "otel/v0.1.0" }
	if got, err := ReleasePlan(mods, []string{"kafka"}, tagged); err != nil || !reflect.DeepEqual(got, []string{"kafka/v0.1.0"}) {
		t.Fatalf("plan = %v, %v", got, err)
	}

	// An existing tag and an unknown module.
	_, err = ReleasePlan(mods, []string{"core", "nope"}, func(tag string) bool { return tag == "core/v0.1.0" })
	if !errors.Is(err, ErrRelease) || !strings.Contains(err.Error(), "tag core/v0.1.0 exists") || !strings.Contains(err.Error(), "nope is not in versions.txt") {
		t.Fatalf("existing tag / unknown module not reported: %v", err)
	}
}
