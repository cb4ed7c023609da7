package contract

import (
	"bytes"
	"errors"
	"testing"
)

func TestPayloadIsDeterministicAndSized(t *testing.T) {
	for _, n := range []int{0, 1, 64, 1000, 1 << 20} {
		a, b := Payload(n), Payload(n)
		if len(a) != n {
			t.Fatalf("Payload(%d) has %d bytes", n, len(a))
		}
		if !bytes.Equal(a, b) {
			t.Fatalf("Payload(%d) differs between calls", n)
		}
	}
}

func TestUserByID(t *testing.T) {
	tests := []struct {
		name string
		id   int64
		want User
	}{
		{"zero", 0, User{ID: 0, Name: "user-0", Email: "user-0@example.com", Age: 18}},
		{"forty-two", 42, User{ID: 42, Name: "user-42", Email: "user-42@example.com", Age: 60}},
		{"negative ids stay in range", -1, User{ID: -1, Name: "user--1", Email: "user--1@example.com", Age: int32(18 + uint64(1<<64-1)%63)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := UserByID(tt.id); got != tt.want {
				t.Fatalf("UserByID(%d) = %+v, want %+v", tt.id, got, tt.want)
			}
		})
	}
}

func TestDivide(t *testing.T) {
	q, r, err := Divide(17, 5)
	if err != nil || q != 3 || r != 2 {
		t.Fatalf("Divide(17,5) = %d,%d,%v", q, r, err)
	}
	if _, _, err := Divide(1, 0); !errors.Is(err, ErrDivideByZero) {
		t.Fatalf("Divide(1,0) error = %v, want ErrDivideByZero", err)
	}
	if Multiply(6, 7) != 42 {
		t.Fatal("Multiply(6,7) != 42")
	}
}
