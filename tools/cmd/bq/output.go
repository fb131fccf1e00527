package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
)

// writeJSON writes v as one indented JSON document.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// writeJSONLine writes v as one compact JSON line (streams: tail, peek).
func writeJSONLine(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// countRow is one line of a count table.
type countRow struct {
	Key   string `json:"key"`
	Count int    `json:"count"`
}

// sortedCounts turns a count map into rows, largest count first, then by
// key, so output is stable.
func sortedCounts(m map[string]int) []countRow {
	rows := make([]countRow, 0, len(m))
	for k, n := range m {
		rows = append(rows, countRow{k, n})
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].Count != rows[j].Count {
			return rows[i].Count > rows[j].Count
		}
		return rows[i].Key < rows[j].Key
	})
	return rows
}

// writeTable writes a header and rows aligned in columns.
func writeTable(w io.Writer, header []string, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// nOf says n things in English: "1 partition", "3 partitions",
// "0 dead letters". plural is the word for n != 1 (singular+"s" if "").
func nOf(n int, singular, plural string) string {
	if plural == "" {
		plural = singular + "s"
	}
	if n == 1 {
		return "1 " + singular
	}
	return strconv.Itoa(n) + " " + plural
}
