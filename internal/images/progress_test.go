package images

import "testing"

func TestProgressFollowsBuildSteps(t *testing.T) {
	p := &progress{}
	// Output from both builders, split mid-line the way pipes deliver it.
	chunks := []string{
		"Sending build context to Docker daemon  2.048kB\nStep 1/4 : FROM protobench/base:abc\n ---> 1234\nStep 2/4 : RU",
		"N go install github.com/bojand/ghz/cmd/ghz@v0.120.0\n",
	}
	for _, c := range chunks {
		p.Write([]byte(c))
	}
	if got, want := p.current(), "step 2/4 (RUN go install github.com/bojand/ghz/cmd/ghz@v0.120.0)"; got != want {
		t.Errorf("legacy builder: %q, want %q", got, want)
	}
	p.Write([]byte("#9 [builder 3/6] RUN --mount=type=cache,target=/root/.cache/go-build go build -o /out/protobench ./cmd/protobench\n"))
	if got := p.current(); got != "step 3/6 (RUN --mount=type=cache,target=/root/.cache/go-build go bu...)" {
		t.Errorf("BuildKit: %q", got)
	}
}

func TestCommandSubject(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"build", "-t", "protobench/ghz:abc", "-f", "x", "."}, "protobench/ghz:abc"},
		{[]string{"import", "-", "protobench/base:abc"}, "protobench/base:abc"},
		{[]string{"pull", "prom/prometheus"}, "docker pull"},
	} {
		if got := commandSubject("docker", tc.args); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.args, got, tc.want)
		}
	}
}
