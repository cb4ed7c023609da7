package loadgen

import (
	"slices"
	"strings"
	"testing"
)

func TestParseMix(t *testing.T) {
	mix, err := ParseMix("Echo:50,GetUser:30,Multiply:20")
	if err != nil {
		t.Fatal(err)
	}
	want := []MethodWeight{{Method: "Echo", Weight: 50}, {Method: "GetUser", Weight: 30}, {Method: "Multiply", Weight: 20}}
	if !slices.Equal(mix, want) {
		t.Fatalf("got %v, want %v", mix, want)
	}
	if got := MixString(mix); got != "Echo:50,GetUser:30,Multiply:20" {
		t.Errorf("MixString = %q", got)
	}
	if mix, err := ParseMix("GetUser"); mix != nil || err != nil {
		t.Errorf("a single method is not a mix: %v %v", mix, err)
	}
	for in, wantErr := range map[string]string{
		"Echo:50":           "at least two methods",
		"Echo:50,Echo:10":   "appears twice",
		"Echo:0,GetUser:1":  "positive integer",
		"Echo:x,GetUser:1":  "positive integer",
		"Echo,GetUser:1":    "want Method:weight",
		":5,GetUser:1":      "want Method:weight",
		"Echo:-3,GetUser:1": "positive integer",
	} {
		if _, err := ParseMix(in); err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("ParseMix(%q) error %v, want %q", in, err, wantErr)
		}
	}
}

func TestApportionMix(t *testing.T) {
	count := func(methods []string) map[string]int {
		c := map[string]int{}
		for _, m := range methods {
			c[m]++
		}
		return c
	}
	tests := []struct {
		weights string
		n       int
		want    map[string]int
	}{
		{"Echo:50,GetUser:30,Multiply:20", 10, map[string]int{"Echo": 5, "GetUser": 3, "Multiply": 2}},
		{"Echo:50,GetUser:30,Multiply:20", 100, map[string]int{"Echo": 50, "GetUser": 30, "Multiply": 20}},
		{"Echo:1,GetUser:1", 3, map[string]int{"Echo": 2, "GetUser": 1}},
		// Every method gets a connection even when its share rounds to none.
		{"Echo:98,GetUser:1,Multiply:1", 3, map[string]int{"Echo": 1, "GetUser": 1, "Multiply": 1}},
		{"Echo:90,GetUser:5,Multiply:5", 4, map[string]int{"Echo": 2, "GetUser": 1, "Multiply": 1}},
	}
	for _, tc := range tests {
		mix, err := ParseMix(tc.weights)
		if err != nil {
			t.Fatal(err)
		}
		methods, err := apportionMix(mix, tc.n)
		if err != nil {
			t.Fatal(err)
		}
		if len(methods) != tc.n {
			t.Fatalf("%s over %d: %d assignments", tc.weights, tc.n, len(methods))
		}
		got := count(methods)
		for m, n := range tc.want {
			if got[m] != n {
				t.Errorf("%s over %d: %s has %d connections, want %d (%v)", tc.weights, tc.n, m, got[m], n, got)
			}
		}
		for _, m := range mix {
			if m.Connections != tc.want[m.Method] {
				t.Errorf("%s over %d: recorded %d connections for %s, want %d", tc.weights, tc.n, m.Connections, m.Method, tc.want[m.Method])
			}
		}
	}
	// Interleaved: the first connections already carry every method, so event loops that take
	// connections round-robin each see the mix.
	mix, _ := ParseMix("Echo:50,GetUser:30,Multiply:20")
	methods, _ := apportionMix(mix, 10)
	if first := count(methods[:4]); len(first) != 3 {
		t.Errorf("first four connections %v carry only %v", methods[:4], first)
	}
	if methods, err := apportionMix(nil, 4); methods != nil || err != nil {
		t.Errorf("no mix: %v %v", methods, err)
	}
	if _, err := apportionMix(mix, 2); err == nil || !strings.Contains(err.Error(), "at least 3 connections") {
		t.Errorf("3 methods over 2 connections: %v", err)
	}
}
