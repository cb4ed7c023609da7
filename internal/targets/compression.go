package targets

import "strings"

// Compression values a step can ask for; the first is the default.
const (
	CompressionNone = "none"
	CompressionGzip = "gzip"
)

// Compressions lists the accepted compression values, the default first.
var Compressions = []string{CompressionNone, CompressionGzip}

// CompressionEnv is the server environment that carries a run's compression (none or gzip).
const CompressionEnv = "PROTOBENCH_COMPRESSION"

// GzipTargets names the targets that can compress, for error messages.
func GzipTargets() string {
	var names []string
	for _, t := range all {
		if t.Gzip != "" {
			names = append(names, t.Name)
		}
	}
	return strings.Join(names, ", ")
}
