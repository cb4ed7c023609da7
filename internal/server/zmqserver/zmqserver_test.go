package zmqserver

import "testing"

func TestEndpoint(t *testing.T) {
	tests := []struct {
		name, addr, want string
		wantErr          bool
	}{
		{"all interfaces", ":5555", "tcp://*:5555", false},
		{"0.0.0.0", "0.0.0.0:5556", "tcp://*:5556", false},
		{"loopback free port", "127.0.0.1:0", "tcp://127.0.0.1:*", false},
		{"no port", "localhost", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Endpoint(tt.addr)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Fatalf("Endpoint(%q) = %q, %v; want %q (error %v)", tt.addr, got, err, tt.want, tt.wantErr)
			}
		})
	}
}
