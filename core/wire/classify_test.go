package wire

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

func TestCheckSchemaVersionHeader(t *testing.T) {
	tests := []struct {
		value   string
		present bool
		ok      bool
	}{
		{"", false, true},
		{"2", false, true}, // absent: the value is not looked at
		{"", true, true},
		{" \t\r\n\v\f", true, true},
		{"1", true, true},
		{"2", true, false},
		{"0", true, false},
		{"x", true, false},
		{"01", true, false},
		{" 1", true, false},
		{"1 ", true, false},
		{"1.0", true, false},
		{"+1", true, false},
		{"\u00a0", true, false}, // NBSP is not blank
		{"\ufeff1", true, false},
	}
	for _, tt := range tests {
		err := CheckSchemaVersionHeader(tt.value, tt.present)
		if tt.ok {
			if err != nil {
				t.Errorf("CheckSchemaVersionHeader(%q, %v) = %v, want nil", tt.value, tt.present, err)
			}
			continue
		}
		var sv *SchemaVersionError
		if !errors.Is(err, ErrUnsupportedSchemaVersion) || !errors.As(err, &sv) || sv.Version != tt.value || sv.Source != "header" {
			t.Errorf("CheckSchemaVersionHeader(%q, %v) = %v, want a SchemaVersionError naming it", tt.value, tt.present, err)
			continue
		}
		if !strings.Contains(err.Error(), strconv.Quote(tt.value)) {
			t.Errorf("error %q does not name %q", err, tt.value)
		}
	}
}

func TestClassifyBody(t *testing.T) {
	tests := []struct {
		body string
		want BodyClass
	}{
		{validBody, ClassAccepted},
		{`{"urn":"u","trace_id":"t","data":{},"meta":{"schema_version":1},"attempts":2}`, ClassAccepted},
		{`nope`, ClassPoison},
		{`{}`, ClassPoison},
		{`{"job":"u","trace_id":"t","data":{},"meta":{"schema_version":1},"attempts":-1}`, ClassPoison},
		{`{"job":"u","trace_id":"t","data":{},"meta":{"schema_version":3},"attempts":0}`, ClassUnsupportedVersion},
		{`{"meta":{"schema_version":"2"}}`, ClassUnsupportedVersion},
	}
	for _, tt := range tests {
		got, err := ClassifyBody([]byte(tt.body))
		if got != tt.want {
			t.Errorf("ClassifyBody(%s) = %v (%v), want %v", tt.body, got, err, tt.want)
		}
		switch tt.want {
		case ClassAccepted:
			if err != nil {
				t.Errorf("ClassifyBody(%s) err = %v", tt.body, err)
			}
		case ClassPoison:
			if !errors.Is(err, ErrPoison) {
				t.Errorf("ClassifyBody(%s) err = %v, want ErrPoison", tt.body, err)
			}
		case ClassUnsupportedVersion:
			if !errors.Is(err, ErrUnsupportedSchemaVersion) {
				t.Errorf("ClassifyBody(%s) err = %v, want ErrUnsupportedSchemaVersion", tt.body, err)
			}
		}
	}
}

func TestBodyClassString(t *testing.T) {
	for c, want := range map[BodyClass]string{
		ClassAccepted: "accepted", ClassPoison: "poison", ClassUnsupportedVersion: "unsupported_version", 0: "BodyClass(0)",
	} {
		if got := c.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", int(c), got, want)
		}
	}
}
