// Shared settings for protobench's k6 scripts (http.js, grpc.js). Installed in the tools image
// under /usr/share/protobench/k6/; the Go adapter (internal/tool/k6) embeds the same files.
//
// Everything comes from environment variables the adapter passes with `k6 run -e KEY=VALUE`:
//   PROTOBENCH_ADDRESS        host:port of the server (required)
//   PROTOBENCH_METHOD         GetUser | Echo | Multiply | Divide (default GetUser)
//   PROTOBENCH_PAYLOAD_BYTES  Echo payload size in bytes (default 0)
//   PROTOBENCH_MODEL          closed (constant VUs, back to back) | open (constant arrival rate)
//   PROTOBENCH_VUS            closed: the VUs; open: the pre-allocated (and maximum) VUs
//   PROTOBENCH_RATE           open: iterations per second (one request per iteration)
//   PROTOBENCH_DURATION       k6 duration string, e.g. 30s
//   PROTOBENCH_PROTO_DIR      grpc.js: proto import path (default /usr/share/protobench/proto)
//   PROTOBENCH_TLS_CA         a TLS step: the run's CA (PEM) as k6 sees it. http.js then speaks
//                             https:// (verified against SSL_CERT_FILE, which compose sets to
//                             the same CA) and grpc.js TLS, trusting this CA (connect's tls.cacerts)

// Request parameters shared with the other tools (internal/tool/{ghz,wrk}).
export const USER_ID = 42;
export const ARITH_A = 1234567;
export const ARITH_B = 89;

function env(name, fallback) {
  const v = __ENV[name];
  if (v === undefined || v === '') {
    if (fallback === undefined) {
      throw new Error(`${name} is not set; the protobench k6 adapter passes it with -e`);
    }
    return fallback;
  }
  return v;
}

function positiveInt(name, fallback) {
  const n = Number(env(name, fallback));
  if (!Number.isInteger(n) || n < 0) {
    throw new Error(`${name}=${__ENV[name]}: want a non-negative integer`);
  }
  return n;
}

export const config = {
  address: env('PROTOBENCH_ADDRESS'),
  method: env('PROTOBENCH_METHOD', 'GetUser'),
  payloadBytes: positiveInt('PROTOBENCH_PAYLOAD_BYTES', '0'),
  model: env('PROTOBENCH_MODEL', 'closed'),
  vus: Math.max(1, positiveInt('PROTOBENCH_VUS', '1')),
  rate: Number(env('PROTOBENCH_RATE', '0')),
  duration: env('PROTOBENCH_DURATION', '10s'),
  protoDir: env('PROTOBENCH_PROTO_DIR', '/usr/share/protobench/proto'),
  tlsCA: env('PROTOBENCH_TLS_CA', ''),
};

// scenario builds the one k6 scenario of a run. Closed: a fixed number of VUs, each sending its
// next request as soon as the previous one is answered. Open: constant-arrival-rate starts
// iterations on a fixed schedule whatever the latency; when every pre-allocated VU is busy, k6
// drops the iteration (counted in dropped_iterations) instead of delaying it, so the rate is not
// silently lowered. maxVUs equals preAllocatedVUs so the client's footprint stays what the step
// says. gracefulStop is short: a request still in flight at the end is cut off rather than
// stretching the measured window.
export function scenario() {
  if (config.model === 'closed') {
    return {
      executor: 'constant-vus',
      vus: config.vus,
      duration: config.duration,
      gracefulStop: '1s',
    };
  }
  if (config.model === 'open') {
    if (!(config.rate > 0)) {
      throw new Error(`PROTOBENCH_RATE=${__ENV.PROTOBENCH_RATE}: the open model needs a rate above 0`);
    }
    // k6 wants an integer rate per timeUnit: express fractional rates per 1000 s.
    const whole = Number.isInteger(config.rate);
    return {
      executor: 'constant-arrival-rate',
      rate: whole ? config.rate : Math.round(config.rate * 1000),
      timeUnit: whole ? '1s' : '1000s',
      duration: config.duration,
      preAllocatedVUs: config.vus,
      maxVUs: config.vus,
      gracefulStop: '1s',
    };
  }
  throw new Error(`PROTOBENCH_MODEL=${config.model}: want closed or open`);
}

// payload is n bytes of the contract payload (internal/contract.Payload): the pattern repeated
// and cut at n, the same bytes every protocol sends.
export function payload(n) {
  const pattern = 'protobench-payload-0123456789abcdefghijklmnopqrstuvwxyz\n';
  return pattern.repeat(Math.floor(n / pattern.length) + 1).substring(0, n);
}
