package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/babelqueue/babelqueue-go/outbox"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
	_ "modernc.org/sqlite"             // database/sql driver "sqlite"
)

const outboxStatsHelp = `Shows the state of a transactional outbox table (the outbox module):
pending rows, the age of the oldest pending row, pending rows with a
recorded send failure and the failed attempts recorded on them, the most
recent error. Published rows are deleted by the relay, so none are counted.

Give one database: --postgres DSN (env BQ_OUTBOX_POSTGRES) or --sqlite
PATH (opened read-only). --table names the table (default bq_outbox).`

const outboxStatsExamples = `  bq outbox stats --postgres 'postgres://app@127.0.0.1:5432/app'
  bq outbox stats --sqlite ./app.db --table orders_outbox --json`

// outboxStats is the output of bq outbox stats.
type outboxStats struct {
	Table           string  `json:"table"`
	Pending         int64   `json:"pending"`
	OldestPendingMS int64   `json:"oldest_pending_ms"`
	OldestPending   string  `json:"oldest_pending"`
	Failing         int64   `json:"failing"`
	Attempts        int64   `json:"failed_attempts"`
	LastError       *string `json:"last_error,omitempty"`
}

func newOutboxStatsCmd() *cobra.Command {
	cmd := leaf("stats", "pending rows, oldest pending age and failures of an outbox table", outboxStatsHelp, outboxStatsExamples)
	fs := cmd.Flags()
	pg := fs.String("postgres", "", "PostgreSQL DSN or URL (env BQ_OUTBOX_POSTGRES)")
	lite := fs.String("sqlite", "", "SQLite database file")
	table := fs.String("table", outbox.DefaultTable, "outbox table")
	asJSON := fs.Bool("json", false, "print JSON")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if *pg == "" && *lite == "" {
			*pg = os.Getenv("BQ_OUTBOX_POSTGRES")
		}
		st, err := readOutboxStats(cmd.Context(), *pg, *lite, *table)
		if err != nil {
			return err
		}
		if *asJSON {
			return writeJSON(cmd.OutOrStdout(), st)
		}
		return printOutboxStats(cmd.OutOrStdout(), st)
	}
	return cmd
}

// readOutboxStats opens the one database given and reads the stats of
// its outbox table within ten seconds.
func readOutboxStats(ctx context.Context, pg, lite, table string) (outboxStats, error) {
	var d outbox.Dialect
	var driver, dsn string
	switch {
	case pg != "" && lite != "":
		return outboxStats{}, usagef("give one of --postgres and --sqlite")
	case pg != "":
		d, driver, dsn = outbox.Postgres, "pgx", pg
	case lite != "":
		d, driver, dsn = outbox.SQLite, "sqlite", "file:"+(&url.URL{Path: lite}).EscapedPath()+"?mode=ro&_pragma=busy_timeout(5000)"
	default:
		return outboxStats{}, usagef("a database is required: --postgres DSN (or BQ_OUTBOX_POSTGRES) or --sqlite PATH")
	}
	ob, err := outbox.New(d, outbox.WithTable(table))
	if err != nil {
		return outboxStats{}, usagef("%v", err)
	}
	if lite != "" {
		// Opening a missing file read-only fails later and less clearly.
		if _, err := os.Stat(lite); err != nil {
			return outboxStats{}, fmt.Errorf("sqlite database: %w", err)
		}
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return outboxStats{}, fmt.Errorf("open database: %w", err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	s, err := ob.Stats(ctx, db)
	if err != nil {
		return outboxStats{}, err
	}
	out := outboxStats{Table: table, Pending: s.Pending, OldestPendingMS: s.OldestPending.Milliseconds(),
		OldestPending: s.OldestPending.Round(time.Millisecond).String(), Failing: s.Failing, Attempts: s.Attempts}
	if s.LastError != "" {
		out.LastError = &s.LastError
	}
	return out, nil
}

func printOutboxStats(w io.Writer, st outboxStats) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "table\t%s\n", st.Table)
	fmt.Fprintf(tw, "pending\t%d\n", st.Pending)
	fmt.Fprintf(tw, "oldest pending\t%s\n", st.OldestPending)
	fmt.Fprintf(tw, "failing\t%d\n", st.Failing)
	fmt.Fprintf(tw, "failed attempts\t%d\n", st.Attempts)
	if st.LastError != nil {
		fmt.Fprintf(tw, "last error\t%s\n", strings.ReplaceAll(*st.LastError, "\n", " "))
	}
	return tw.Flush()
}
