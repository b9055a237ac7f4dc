"""An OTLP/HTTP (protobuf) receiver for the telemetry tests, built on the official
opentelemetry-proto definitions: it decodes what toolhost exports and appends one JSON line per
span and per metric to OUT, so that the Rust test can assert on names, attributes and parentage.

    receiver.py OUT        prints its port on stdout, then serves 127.0.0.1 until killed
"""
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

OUT = sys.argv[1]


def value(v):
    kind = v.WhichOneof("value")
    return getattr(v, kind) if kind else None


def attributes(items):
    return {a.key: value(a.value) for a in items}


def spans(body):
    request = ExportTraceServiceRequest.FromString(body)
    for rs in request.resource_spans:
        resource = attributes(rs.resource.attributes)
        for ss in rs.scope_spans:
            for s in ss.spans:
                yield {
                    "kind": "span",
                    "name": s.name,
                    "span_kind": s.kind,
                    "trace_id": s.trace_id.hex(),
                    "span_id": s.span_id.hex(),
                    "parent_span_id": s.parent_span_id.hex(),
                    "start": s.start_time_unix_nano,
                    "end": s.end_time_unix_nano,
                    "attributes": attributes(s.attributes),
                    "status": s.status.code,
                    "resource": resource,
                    "scope": ss.scope.name,
                }


def metrics(body):
    request = ExportMetricsServiceRequest.FromString(body)
    for rm in request.resource_metrics:
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                data = m.WhichOneof("data")
                points = []
                for p in getattr(m, data).data_points:
                    point = {"attributes": attributes(p.attributes)}
                    if data == "histogram":
                        point["count"] = p.count
                    else:
                        point["value"] = value_of(p)
                    points.append(point)
                yield {"kind": "metric", "name": m.name, "type": data, "unit": m.unit, "points": points}


def value_of(point):
    kind = point.WhichOneof("value")
    return getattr(point, kind) if kind else None


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        if self.path == "/v1/traces":
            records, answer = list(spans(body)), ExportTraceServiceResponse()
        elif self.path == "/v1/metrics":
            records, answer = list(metrics(body)), ExportMetricsServiceResponse()
        else:
            self.send_response(404)
            self.end_headers()
            return
        with open(OUT, "a", encoding="utf-8") as out:
            for r in records:
                out.write(json.dumps(r) + "\n")
        payload = answer.SerializeToString()
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
