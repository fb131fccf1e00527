package wire

import (
	"testing"
	"unsafe"
)

// TestProjectStringViewsTheBody checks that the unescaped values of a
// string body are views of it (no allocation), while ProjectBody copies.
func TestProjectStringViewsTheBody(t *testing.T) {
	body := validBody
	inside := func(s string) bool {
		p, b := uintptr(unsafe.Pointer(unsafe.StringData(s))), uintptr(unsafe.Pointer(unsafe.StringData(body)))
		return p >= b && p+uintptr(len(s)) <= b+uintptr(len(body))
	}
	p := ProjectString(body)
	for name, v := range map[string]string{"job": p.Job, "trace": p.TraceID, "id": p.MessageID, "version": p.SchemaVersion, "lang": p.SourceLang} {
		if !inside(v) {
			t.Errorf("%s %q is not a view of the body", name, v)
		}
	}
	if inside(ProjectBody([]byte(body)).Job) {
		t.Error("ProjectBody returned a view")
	}
	if n := testing.AllocsPerRun(100, func() { p = ProjectString(body) }); n != 0 {
		t.Errorf("ProjectString allocated %v times, want 0", n)
	}
	escaped := `{"job":"\u0041b","meta":{"id":"i\"d"}}`
	if got := ProjectString(escaped); got.Job != "Ab" || got.MessageID != `i"d` || inside(got.Job) {
		t.Errorf("escaped values = %+v", got)
	}
}
