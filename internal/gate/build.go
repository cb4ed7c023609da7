package gate

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// ProtocolLabel is the image label (or Dockerfile LABEL) that says which protocol a build
// serves, so that the gate can refuse two builds that do not serve the same one.
const ProtocolLabel = "org.protobench.protocol"

// Build is one side of the gate: an image the local Docker has, or a Dockerfile to build.
type Build struct {
	Flag       string // --base or --head, for errors
	Image      string
	Dockerfile string // absolute
	Protocol   string // from its label; "" when it has none
}

// Key is what the scenario's custom target says: image or dockerfile.
func (b Build) Key() (string, string) {
	if b.Dockerfile != "" {
		return "dockerfile", b.Dockerfile
	}
	return "image", b.Image
}

// ResolveBuild reads a --base or --head value: a path to a Dockerfile, else an image the
// docker CLI can inspect; anything else is refused naming the flag.
func ResolveBuild(flag, value, docker string) (Build, error) {
	b := Build{Flag: flag}
	if value == "" {
		return b, fmt.Errorf("%s: missing; give an image (myserver:head) or a Dockerfile (path/to/Dockerfile)", flag)
	}
	if st, err := os.Stat(value); err == nil {
		if st.IsDir() {
			return b, fmt.Errorf("%s %s: a folder; give its Dockerfile (%s) or an image", flag, value, filepath.Join(value, "Dockerfile"))
		}
		data, err := os.ReadFile(value)
		if err != nil {
			return b, fmt.Errorf("%s %s: %v", flag, value, err)
		}
		if !isDockerfile(data) {
			return b, fmt.Errorf("%s %s: not a Dockerfile (no FROM instruction) and not an image", flag, value)
		}
		b.Dockerfile, _ = filepath.Abs(value)
		b.Protocol = dockerfileLabel(data)
		return b, nil
	}
	out, err := exec.Command(docker, "image", "inspect", "--format", "{{index .Config.Labels \""+ProtocolLabel+"\"}}", value).CombinedOutput()
	if err != nil {
		return b, fmt.Errorf("%s %q: neither a Dockerfile nor an image the docker CLI knows (%s)", flag, value, strings.TrimSpace(string(out)))
	}
	b.Image = value
	if p := strings.TrimSpace(string(out)); p != "<no value>" {
		b.Protocol = p
	}
	return b, nil
}

var fromLine = regexp.MustCompile(`(?im)^\s*FROM\s+\S+`)

func isDockerfile(data []byte) bool { return fromLine.Match(data) }

var labelLine = regexp.MustCompile(`(?i)^\s*LABEL\s+(.*)$`)

// dockerfileLabel finds ProtocolLabel=value in the Dockerfile's LABEL lines.
func dockerfileLabel(data []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		m := labelLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		for _, kv := range strings.Fields(m[1]) {
			k, v, ok := strings.Cut(kv, "=")
			if ok && strings.Trim(k, `"`) == ProtocolLabel {
				return strings.Trim(v, `"`)
			}
		}
	}
	return ""
}

// Protocol decides the protocol both builds serve: the --protocol flag, else their labels,
// which must agree.
func Protocol(flagValue string, base, head Build) (string, error) {
	for _, b := range []Build{base, head} {
		if flagValue != "" && b.Protocol != "" && b.Protocol != flagValue {
			return "", fmt.Errorf("%s serves %s (label %s), but --protocol is %s", b.Flag, b.Protocol, ProtocolLabel, flagValue)
		}
	}
	if base.Protocol != "" && head.Protocol != "" && base.Protocol != head.Protocol {
		return "", fmt.Errorf("--head serves %s but --base serves %s (label %s): the gate compares two builds of one server, not two protocols", head.Protocol, base.Protocol, ProtocolLabel)
	}
	switch {
	case flagValue != "":
		return flagValue, nil
	case base.Protocol != "":
		return base.Protocol, nil
	case head.Protocol != "":
		return head.Protocol, nil
	}
	return "", fmt.Errorf("--protocol: missing, and neither build has the label %s; give --protocol grpc (or http, connect, ...)", ProtocolLabel)
}
