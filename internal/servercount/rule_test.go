package servercount

import (
	"strings"
	"testing"
)

func TestMismatch(t *testing.T) {
	for _, c := range []struct {
		name string
		in   Check
		want bool
	}{
		{"equal", Check{ToolOK: 1000, ServerOK: 1000, InFlight: 10}, false},
		{"within the requests in flight, either way", Check{ToolOK: 1010, ServerOK: 1000, InFlight: 10}, false},
		{"fewer within them", Check{ToolOK: 990, ServerOK: 1000, InFlight: 10}, false},
		{"tool counts more than in flight", Check{ToolOK: 1011, ServerOK: 1000, InFlight: 10}, true},
		{"tool counts fewer than in flight allows", Check{ToolOK: 989, ServerOK: 1000, InFlight: 10}, true},
		{"errors counted as successes", Check{ToolOK: 5000, ServerOK: 0, InFlight: 100}, true},
		{"one way: server counted a warm-up too", Check{ToolOK: 1000, ServerOK: 1500, InFlight: 10, OneWay: true}, false},
		{"one way still catches a tool counting more", Check{ToolOK: 1000, ServerOK: 500, InFlight: 10, OneWay: true}, true},
	} {
		got, why := Mismatch(c.in)
		if got != c.want {
			t.Errorf("%s: Mismatch(%+v) = %v (%q), want %v", c.name, c.in, got, why, c.want)
		}
		if got && !strings.Contains(why, "server answered") {
			t.Errorf("%s: why %q does not say what the server answered", c.name, why)
		}
	}
}

func TestOKCode(t *testing.T) {
	for code, want := range map[string]bool{
		"OK": true, "200": true, "204": true, "InvalidArgument": false, "ResourceExhausted": false,
		"ERROR": false, "ERR": false, "400": false, "500": false, "2xx": false, "": false,
	} {
		if got := OKCode(code); got != want {
			t.Errorf("OKCode(%q) = %v, want %v", code, got, want)
		}
	}
}

func TestParse(t *testing.T) {
	body := `# HELP protobench_server_requests_total Requests handled.
# TYPE protobench_server_requests_total counter
protobench_server_requests_total{code="OK",method="GetUser",protocol="grpc"} 120
protobench_server_requests_total{code="OK",method="Echo",protocol="grpc"} 5
protobench_server_requests_total{code="InvalidArgument",method="Divide",protocol="grpc"} 7
# HELP go_goroutines Number of goroutines.
# TYPE go_goroutines gauge
go_goroutines 9
`
	c, err := Parse(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if c != (Counts{OK: 125, Errors: 7}) {
		t.Fatalf("Parse = %+v, want OK 125, errors 7", c)
	}
	c, err = Parse(strings.NewReader("# TYPE go_goroutines gauge\ngo_goroutines 9\n"))
	if err != nil || c != Zero {
		t.Fatalf("a server that answered nothing yet: Parse = %+v, %v; want zero", c, err)
	}
	if _, err := Parse(strings.NewReader("not the exposition format {\n")); err == nil {
		t.Fatal("Parse accepted a body that is not the exposition format")
	}
}
