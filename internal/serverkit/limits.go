package serverkit

// FramingSlackBytes is what a protocol's framing may add to an Echo payload of the configured
// maximum: a protobuf EchoRequest adds a tag byte and a length varint, a gob EchoArgs a few type
// and field bytes. 1 KiB covers each with room to spare.
const FramingSlackBytes = 1024

// MaxMessageBytes is the one size limit every server applies to a whole request message before
// decoding it (gRPC's MaxRecvMsgSize, libzmq's ZMQ_MAXMSGSIZE, a gob message, a REST body): the
// payload limit plus framing, so an Echo of exactly maxPayload bytes still fits and anything
// larger is refused without being buffered.
func MaxMessageBytes(maxPayload int) int { return maxPayload + FramingSlackBytes }
