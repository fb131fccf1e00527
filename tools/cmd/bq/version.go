package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3";
// otherwise the module version recorded by "go install ...@version" is
// used, else the source version (sourceVersions).
var version = ""

// sourceVersions are the versions of tools, core and the bindings that
// this source belongs to, as versions.txt lists them (TestSourceVersions
// keeps them equal). A build from a checkout, where the Go toolchain
// records a workspace module as "(devel)", reports them with "+source".
var sourceVersions = map[string]string{"tools": "v0.1.0", "core": "v0.1.0", "kafka": "v0.1.0", "pulsar": "v0.1.0"}

// The modules whose versions bq version prints after its own.
var versionDeps = []string{
	"github.com/babelqueue/babelqueue-go/core",
	"github.com/babelqueue/babelqueue-go/kafka",
	"github.com/babelqueue/babelqueue-go/pulsar",
}

// versionString names the bq version, its VCS revision when known, the
// Go version it was built with and, on the following lines, the version
// of core and of each binding linked in.
func versionString() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		info = &debug.BuildInfo{}
	}
	return formatVersion(info, version)
}

// formatVersion is versionString over a given build info.
func formatVersion(info *debug.BuildInfo, ldVersion string) string {
	v, rev, dirty := ldVersion, "", ""
	if v == "" && info.Main.Version != "" && info.Main.Version != "(devel)" {
		v = info.Main.Version
	}
	if v == "" {
		v = sourceVersions["tools"] + "+source"
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev != "" {
		v += " (" + rev + dirty + ")"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "bq %s %s %s/%s", v, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	for _, path := range versionDeps {
		short := path[strings.LastIndex(path, "/")+1:]
		dv := "not linked"
		for _, d := range info.Deps {
			if d.Path != path {
				continue
			}
			dv = d.Version
			if d.Replace != nil {
				if d.Replace.Version != "" {
					dv = d.Replace.Version
				}
				if strings.HasPrefix(d.Replace.Path, ".") || strings.HasPrefix(d.Replace.Path, "/") {
					dv += " (from " + d.Replace.Path + ")"
				}
			}
			if dv == "(devel)" || dv == "" {
				dv = sourceVersions[short] + "+source"
			}
		}
		fmt.Fprintf(&b, "\n  %-7s%s", short, dv)
	}
	return b.String()
}

func newVersionCmd() *cobra.Command {
	c := leaf("version", "print the versions of bq, core and the bindings", "Prints the bq version (the module version, else the one of this source with +source), its VCS revision when known, the Go version, then the version of core and of each binding it was built with.", "  bq version")
	c.RunE = func(c *cobra.Command, _ []string) error {
		_, err := fmt.Fprintln(c.OutOrStdout(), versionString())
		return err
	}
	return c
}
