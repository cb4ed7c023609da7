package scenario

import (
	"fmt"
	"io"
	"os"
	"regexp"

	"go.yaml.in/yaml/v3"
)

// What a scenario file from someone else may not do: be large enough to cost the parser memory
// without end, or carry an environment key that a generated compose file could read as
// something other than a variable name. Scenario files are shared (a colleague's, one from an
// article), and the runner starts containers as root from them.

// MaxFileBytes is the largest scenario file accepted; the shipped ones are under 20 KiB.
const MaxFileBytes = 1 << 20

// envKey is what a POSIX shell and compose accept as a variable name.
var envKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ValidEnvKey reports whether k may name an environment variable of a container.
func ValidEnvKey(k string) bool { return envKey.MatchString(k) }

// readFile reads a scenario file, refusing one above MaxFileBytes before reading it all.
func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	if err := checkSize(path, data); err != nil {
		return nil, err
	}
	return data, nil
}

// checkSize refuses data above MaxFileBytes, at line 1 of the file.
func checkSize(file string, data []byte) error {
	if len(data) <= MaxFileBytes {
		return nil
	}
	return Errors{{File: file, Line: 1, Field: "scenario",
		Msg: fmt.Sprintf("the file is larger than %d bytes (1 MiB), the most a scenario file may hold", MaxFileBytes)}}
}

// decodeEnvironment reads a custom target's environment: variable names to values. A key that
// is not a variable name is refused at its own line, so that nothing but a name ever reaches a
// compose file's environment block.
func (d *decoder) decodeEnvironment(v *yaml.Node, f string) map[string]string {
	env := map[string]string{}
	v = resolve(v)
	if v.Kind != yaml.MappingNode {
		d.add(v.Line, f, "expected a mapping of variable names to values, got %s", describe(v))
		return env
	}
	for i := 0; i+1 < len(v.Content); i += 2 {
		k := resolve(v.Content[i])
		if !ValidEnvKey(k.Value) {
			d.add(k.Line, join(f, fieldKey(k.Value)), "expected a variable name (a letter or _, then letters, digits or _), got %q", clip(k.Value))
			continue
		}
		if val, ok := d.text(v.Content[i+1], join(f, k.Value)); ok {
			env[k.Value] = val
		}
	}
	return env
}
