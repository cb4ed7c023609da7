package images

import (
	"encoding/json"
	"fmt"
	"strings"
)

// dockerfileInfo is what Ensure needs to know about a Dockerfile: the build args it declares
// (only those are passed, so the legacy builder does not warn about unused ones) and the
// context paths its COPY/ADD instructions read (only those go into the context and its hash).
type dockerfileInfo struct {
	Args    []string // declared ARG names, in order, without duplicates
	Sources []string // COPY/ADD sources from the build context, as written ("." for all)
}

// parseDockerfile reads the instructions Ensure cares about. It understands line continuations,
// comments, flags (--from, --chown, ...) and the JSON form. COPY --from reads another stage, not
// the context, and ADD of a URL fetches remotely, so neither contributes sources.
func parseDockerfile(text string) (dockerfileInfo, error) {
	var info dockerfileInfo
	seen := map[string]bool{}
	for _, inst := range logicalLines(text) {
		fields := strings.Fields(inst.text)
		if len(fields) == 0 {
			continue
		}
		keyword := strings.ToUpper(fields[0])
		rest := strings.TrimSpace(inst.text[len(fields[0]):])
		switch keyword {
		case "ARG":
			for _, f := range strings.Fields(rest) {
				name, _, _ := strings.Cut(f, "=")
				if name != "" && !seen[name] {
					seen[name] = true
					info.Args = append(info.Args, name)
				}
			}
		case "COPY", "ADD":
			args, err := instructionArgs(rest)
			if err != nil {
				return info, fmt.Errorf("line %d: %s: %w", inst.line, keyword, err)
			}
			fromStage := false
			var operands []string
			for _, a := range args {
				if strings.HasPrefix(a, "--") && len(operands) == 0 {
					if strings.HasPrefix(a, "--from=") {
						fromStage = true
					}
					continue
				}
				operands = append(operands, a)
			}
			if len(operands) < 2 {
				return info, fmt.Errorf("line %d: %s needs a source and a destination", inst.line, keyword)
			}
			if fromStage {
				continue
			}
			for _, src := range operands[:len(operands)-1] {
				if strings.Contains(src, "://") {
					continue
				}
				info.Sources = append(info.Sources, src)
			}
		}
	}
	return info, nil
}

// logicalLine is one instruction after joining continuation lines.
type logicalLine struct {
	line int // 1-based line where the instruction starts
	text string
}

// logicalLines joins backslash continuations and drops comments and blank lines.
func logicalLines(text string) []logicalLine {
	var out []logicalLine
	var cur strings.Builder
	start := 0
	for i, raw := range strings.Split(text, "\n") {
		line := strings.TrimRight(raw, " \t\r")
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "#") {
			continue // comments may sit inside a continued instruction too
		}
		if cur.Len() == 0 {
			if trimmed == "" {
				continue
			}
			start = i + 1
		}
		if strings.HasSuffix(line, `\`) {
			cur.WriteString(strings.TrimSuffix(line, `\`))
			cur.WriteString(" ")
			continue
		}
		cur.WriteString(line)
		out = append(out, logicalLine{line: start, text: strings.TrimSpace(cur.String())})
		cur.Reset()
	}
	if cur.Len() > 0 {
		out = append(out, logicalLine{line: start, text: strings.TrimSpace(cur.String())})
	}
	return out
}

// instructionArgs splits COPY/ADD arguments in either the shell form or the JSON form; flags
// always come first in the shell form.
func instructionArgs(rest string) ([]string, error) {
	var flags []string
	for strings.HasPrefix(rest, "--") {
		f, after, _ := strings.Cut(rest, " ")
		flags = append(flags, f)
		rest = strings.TrimSpace(after)
	}
	if strings.HasPrefix(rest, "[") {
		var list []string
		if err := json.Unmarshal([]byte(rest), &list); err != nil {
			return nil, fmt.Errorf("bad JSON form %s: %v", rest, err)
		}
		return append(flags, list...), nil
	}
	return append(flags, strings.Fields(rest)...), nil
}
