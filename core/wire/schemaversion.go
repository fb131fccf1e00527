package wire

// SchemaVersion is the envelope schema version this SDK reads and writes.
const SchemaVersion = 1

// schemaVersionText is SchemaVersion as the bq-schema-version header
// carries it.
const schemaVersionText = "1"

// CheckSchemaVersionHeader applies the version gate (CONTRACT.md 2.8) to the
// bq-schema-version header or property before a body is decoded. present
// reports whether the header was delivered. It returns nil when the header
// is absent or blank (see IsBlank) or exactly "1"; any other value ("2",
// "x", "01", " 1", "1.0") gives a *SchemaVersionError naming the value,
// which wraps ErrUnsupportedSchemaVersion.
func CheckSchemaVersionHeader(value string, present bool) error {
	if !present || IsBlank(value) || value == schemaVersionText {
		return nil
	}
	return &SchemaVersionError{Version: value, Source: "header"}
}
