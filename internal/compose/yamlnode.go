package compose

import (
	"bytes"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Small builders of yaml.v3 nodes: the generated compose files are trees of these, written by
// the encoder, which quotes whatever needs quoting.

// str is a plain string scalar (the encoder quotes it when plain would change its meaning).
func str(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

// quoted is a double-quoted string scalar.
func quoted(s string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s, Style: yaml.DoubleQuotedStyle}
}

// mapping is a block mapping of alternating keys and values.
func mapping(kv ...*yaml.Node) *yaml.Node { return &yaml.Node{Kind: yaml.MappingNode, Content: kv} }

// add appends key: value to a mapping.
func add(m *yaml.Node, key string, value *yaml.Node) { m.Content = append(m.Content, str(key), value) }

// flowList is a flow sequence of double-quoted strings, with literal dollars kept from compose.
func flowList(xs []string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
	for _, x := range xs {
		n.Content = append(n.Content, quoted(escapeDollars(x)))
	}
	return n
}

// encodeYAML writes one node as a YAML document, indented by two spaces.
func encodeYAML(n *yaml.Node) ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(n); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// ScrapeTargets is a Prometheus file_sd list of one target group (host:port strings) under a
// comment header (lines without "# "), as the servers job reads it.
func ScrapeTargets(header []string, targets []string) ([]byte, error) {
	list := &yaml.Node{Kind: yaml.SequenceNode}
	for _, t := range targets {
		list.Content = append(list.Content, quoted(t))
	}
	text, err := encodeYAML(&yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{mapping(str("targets"), list)}})
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	for _, h := range header {
		b.WriteString(strings.TrimRight("# "+commentLine(h), " ") + "\n")
	}
	b.Write(text)
	return b.Bytes(), nil
}

// ToolService is a load tool's service for docker-compose.yml's services block (its lines,
// indented under services:): the shared *tool block, the image (a reference or a ${VAR:-default}
// expression), the program as entrypoint (none when empty), and extra, the adapter's own YAML
// (a mapping of more settings, as tool.Capabilities.Compose gives it).
func ToolService(name, image, program, extra string) ([]byte, error) {
	n := mapping(&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!merge", Value: "<<"}, &yaml.Node{Kind: yaml.AliasNode, Value: "tool"},
		str("image"), str(image))
	if program != "" {
		add(n, "entrypoint", &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle, Content: []*yaml.Node{quoted(program)}})
	}
	if strings.TrimSpace(extra) != "" {
		var doc yaml.Node
		if err := yaml.Unmarshal([]byte(extra), &doc); err != nil {
			return nil, fmt.Errorf("its compose lines: %w", err)
		}
		if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
			return nil, fmt.Errorf("its compose lines are not a mapping")
		}
		n.Content = append(n.Content, doc.Content[0].Content...)
	}
	text, err := encodeYAML(mapping(str("services"), mapping(str(name), n)))
	if err != nil {
		return nil, err
	}
	return bytes.TrimPrefix(text, []byte("services:\n")), nil
}
