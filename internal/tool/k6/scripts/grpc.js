// protobench's k6 script for the gRPC servers (servers/grpc, servers/python-grpc). Settings: see
// lib.js. k6 gives every VU its own connection: VUs here are connections, unlike ghz, which
// multiplexes its workers over --connections.
import grpc from 'k6/net/grpc';
import encoding from 'k6/encoding';
import { check } from 'k6';
import { config, scenario, payload, USER_ID, ARITH_A, ARITH_B } from './lib.js';

export const options = {
  scenarios: { protobench: scenario() },
};

const client = new grpc.Client();
client.load([config.protoDir], 'protobench/v1/bench.proto');

function buildMessage() {
  switch (config.method) {
    case 'GetUser':
      return { id: USER_ID };
    case 'Echo':
      // bytes fields travel as base64 in the JSON form k6 hands to protobuf.
      return { payload: encoding.b64encode(payload(config.payloadBytes)) };
    case 'Multiply':
    case 'Divide':
      return { a: ARITH_A, b: ARITH_B };
    default:
      throw new Error(`PROTOBENCH_METHOD=${config.method}: unary gRPC methods are GetUser, Echo, Multiply, Divide`);
  }
}

const message = buildMessage();
const rpc = `protobench.v1.Bench/${config.method}`;
// Raise gRPC's 4 MiB message limit for large Echo payloads.
const messageLimit = Math.max(4 << 20, config.payloadBytes + (64 << 10));

// A TLS step: TLS with ALPN h2, trusting the run's CA, read here in the init context (open is
// not allowed later).
const connectParams = config.tlsCA
  ? { plaintext: false, tls: { cacerts: [open(config.tlsCA)] }, maxReceiveSize: messageLimit, maxSendSize: messageLimit }
  : { plaintext: true, maxReceiveSize: messageLimit, maxSendSize: messageLimit };

let connected = false;

export default function () {
  let ok = false;
  try {
    // connect is not allowed in the init context: each VU connects on its first iteration, and
    // again after a failed attempt.
    if (!connected) {
      client.connect(config.address, connectParams);
      connected = true;
    }
    const res = client.invoke(rpc, message);
    ok = res !== null && res.status === grpc.StatusOK;
  } catch (e) {
    // A refused connection or a broken one throws: count it as a failed request (the check
    // below) instead of letting k6 log and drop the iteration.
    ok = false;
  }
  check(ok, { ok: (v) => v });
}
