// Package tools holds operator and test tooling for BabelQueue for Go.
package tools
