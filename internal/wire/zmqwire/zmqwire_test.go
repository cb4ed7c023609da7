package zmqwire

import (
	"bytes"
	"errors"
	"testing"
)

func TestRequestRoundTrip(t *testing.T) {
	frames := EncodeRequest("Echo", 0x0102030405060708, []byte("body"))
	if !bytes.Equal(frames[2], []byte{1, 2, 3, 4, 5, 6, 7, 8}) {
		t.Fatalf("id frame = %v, want big endian", frames[2])
	}
	req, err := DecodeRequest(frames)
	if err != nil {
		t.Fatal(err)
	}
	if req.Method != "Echo" || req.ID != 0x0102030405060708 || string(req.Body) != "body" {
		t.Fatalf("decoded %+v", req)
	}
	// What a REQ socket sends is the same once its socket adds the delimiter.
	withDelim := append([][]byte{{}}, EncodeREQRequest("Echo", 0x0102030405060708, []byte("body"))...)
	if req2, err := DecodeRequest(withDelim); err != nil || req2.Method != req.Method || req2.ID != req.ID {
		t.Fatalf("REQ form decoded %+v, %v", req2, err)
	}
}

func TestDecodeRequestRejects(t *testing.T) {
	tests := []struct {
		name   string
		frames [][]byte
	}{
		{"no frames", nil},
		{"missing body", [][]byte{{}, []byte("Echo"), ID(1)}},
		{"extra frame", [][]byte{{}, []byte("Echo"), ID(1), nil, nil}},
		{"no delimiter", [][]byte{[]byte("x"), []byte("Echo"), ID(1), nil}},
		{"short id", [][]byte{{}, []byte("Echo"), {1, 2}, nil}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := DecodeRequest(tt.frames); !errors.Is(err, ErrFraming) {
				t.Fatalf("err = %v, want ErrFraming", err)
			}
		})
	}
}

func TestReplyForms(t *testing.T) {
	dealer := EncodeReply(StatusErr, 7, []byte("division by zero"))
	tests := []struct {
		name   string
		frames [][]byte
	}{
		{"dealer", dealer},
		{"req", dealer[1:]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := DecodeReply(tt.frames)
			if err != nil {
				t.Fatal(err)
			}
			if r.ID != 7 || r.Err() == nil || r.Err().Error() != "ZeroMQ server: division by zero" {
				t.Fatalf("reply %+v err %v", r, r.Err())
			}
		})
	}
	if _, err := DecodeReply([][]byte{{}, []byte("MAYBE"), ID(1), nil}); !errors.Is(err, ErrFraming) {
		t.Fatalf("bad status: err = %v", err)
	}
}
