package sub

// A reference by name (DESIGN.md, "Acknowledgement
// ledger") broken over two lines.
//
// One by a name that is gone (mod/DESIGN.md, "Waves").
//
// One by number (DESIGN.md, section 3).
//
// One by a numbered heading's name (DESIGN.md, "Numbered heading").
//
// One to a document that does not exist (other/DESIGN.md).
func F() {}

// A list of names (DESIGN.md, "Acknowledgement ledger", "Numbered heading"
// and "Gone too").
func G() {}

// Short names (DESIGN.md, "Settle", "Claim on PostgreSQL").
func H() {}
