package schemacheck_test

import (
	"io/fs"
	"testing/fstest"
)

func mapFS(files map[string]string) fs.FS {
	m := fstest.MapFS{}
	for k, v := range files {
		m[k] = &fstest.MapFile{Data: []byte(v)}
	}
	return m
}
