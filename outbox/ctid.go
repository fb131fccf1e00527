package outbox

import (
	"context"
	"database/sql"
	"fmt"
)

// deleteByCtid deletes, in a PostgreSQL claim's transaction, the rows at
// ctids: a TID scan, no lookup in the primary key's index (DESIGN.md,
// "Settle"). No other claim changes a row of a key this claim holds, and
// a table rewrite waits for its transaction, so each ctid is still its
// row; should one have moved (an UPDATE outside the relay) the deletion
// fails and settle rolls back, so the claim's rows are all sent again.
func (r *Relay) deleteByCtid(ctx context.Context, tx *sql.Tx, ctids []string) error {
	if len(ctids) == 0 {
		return nil
	}
	b := make([]byte, 0, 12*len(ctids)+2)
	b = append(b, '{')
	for i, c := range ctids {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(append(append(b, '"'), c...), '"')
	}
	res, err := tx.ExecContext(ctx, r.ob.st.delete, string(append(b, '}')))
	if err == nil {
		var n int64
		if n, err = res.RowsAffected(); err == nil && n != int64(len(ctids)) {
			err = fmt.Errorf("%d of %d rows found", n, len(ctids))
		}
	}
	if err != nil {
		return fmt.Errorf("outbox: delete published rows: %w", err)
	}
	return nil
}
