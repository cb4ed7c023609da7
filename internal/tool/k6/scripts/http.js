// protobench's k6 script for the REST server (servers/rest). Settings: see lib.js.
import http from 'k6/http';
import { check } from 'k6';
import { config, scenario, payload, USER_ID, ARITH_A, ARITH_B } from './lib.js';

export const options = {
  scenarios: { protobench: scenario() },
  // Only the status is checked; keeping bodies would add allocation to every iteration.
  discardResponseBodies: true,
};

// A TLS step: https://, verified by Go's crypto/x509 against SSL_CERT_FILE (the run's CA, set by
// compose's k6 service); HTTP/1.1, since the k6 service runs with GODEBUG=http2client=0, as the
// step's http_version says.
const base = `${config.tlsCA ? 'https' : 'http'}://${config.address}`;
const jsonHeaders = { headers: { 'Content-Type': 'application/json' } };
const arithBody = JSON.stringify({ a: ARITH_A, b: ARITH_B });

// request is built once per VU so the iteration does nothing but send.
function buildRequest() {
  switch (config.method) {
    case 'GetUser':
      return () => http.get(`${base}/v1/users/${USER_ID}`);
    case 'Echo': {
      const body = payload(config.payloadBytes);
      const params = { headers: { 'Content-Type': 'application/octet-stream' } };
      return () => http.post(`${base}/v1/echo`, body, params);
    }
    case 'Multiply':
      return () => http.post(`${base}/v1/multiply`, arithBody, jsonHeaders);
    case 'Divide':
      return () => http.post(`${base}/v1/divide`, arithBody, jsonHeaders);
    default:
      throw new Error(`PROTOBENCH_METHOD=${config.method}: REST serves GetUser, Echo, Multiply, Divide`);
  }
}

const send = buildRequest();

export default function () {
  const res = send();
  check(res, { ok: (r) => r.status === 200 });
}
