// Package grpchealth is the wire format of the gRPC health checking
// protocol (grpc.health.v1.Health/Check) and the names of gRPC status
// codes, shared by the grpc check and the proxy's return probes, so
// neither needs the gRPC library.
package grpchealth

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
)

// Path is the health checking protocol's Check method.
const Path = "/grpc.health.v1.Health/Check"

// MaxResponse bounds the response body ServingStatus reads: a
// HealthCheckResponse is a few bytes.
const MaxResponse = 64 << 10

// Request is the request body of Check for service ("" asks for the
// server's overall health): one uncompressed gRPC message holding the
// protobuf encoding of HealthCheckRequest{service} (field 1, a string,
// omitted when empty).
func Request(service string) []byte {
	var msg []byte
	if service != "" {
		msg = append([]byte{0x0a}, binary.AppendUvarint(nil, uint64(len(service)))...)
		msg = append(msg, service...)
	}
	b := make([]byte, 5, 5+len(msg))
	binary.BigEndian.PutUint32(b[1:], uint32(len(msg)))
	return append(b, msg...)
}

// Serving statuses of HealthCheckResponse.
const (
	Unknown    = 0
	Serving    = 1
	NotServing = 2
)

// ServingNames names the serving statuses.
var ServingNames = map[uint64]string{0: "UNKNOWN", 1: "SERVING", 2: "NOT_SERVING", 3: "SERVICE_UNKNOWN"}

// CodeNames are the gRPC status codes by number.
var CodeNames = [...]string{"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
	"ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE",
	"UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"}

// StatusName is a grpc-status value with its name: "14 (UNAVAILABLE)";
// a value that is no code stays as it is.
func StatusName(v string) string {
	if n, err := strconv.Atoi(v); err == nil && n >= 0 && n < len(CodeNames) {
		return v + " (" + CodeNames[n] + ")"
	}
	return v
}

// ServingStatus reads HealthCheckResponse.status from a response body of
// one gRPC message (at most MaxResponse bytes). Unknown fields are skipped; a missing status is 0
// (UNKNOWN), protobuf's default.
func ServingStatus(body []byte) (uint64, error) {
	if len(body) < 5 {
		return 0, fmt.Errorf("the response holds no gRPC message (%d bytes)", len(body))
	}
	if len(body) > MaxResponse {
		return 0, fmt.Errorf("the response is over %d bytes", MaxResponse)
	}
	if body[0] != 0 {
		return 0, errors.New("the response message is compressed, which vigil did not ask for")
	}
	n := binary.BigEndian.Uint32(body[1:5])
	if uint64(n) > uint64(len(body)-5) {
		return 0, fmt.Errorf("the response message is cut (%d of %d bytes)", len(body)-5, n)
	}
	msg := body[5 : 5+n]
	var status uint64
	for len(msg) > 0 {
		key, k := binary.Uvarint(msg)
		if k <= 0 {
			return 0, errors.New("the response message is not protobuf")
		}
		msg = msg[k:]
		field, wire := key>>3, key&7
		switch wire {
		case 0:
			x, k := binary.Uvarint(msg)
			if k <= 0 {
				return 0, errors.New("the response message is not protobuf")
			}
			msg = msg[k:]
			if field == 1 {
				status = x
			}
		case 1:
			if len(msg) < 8 {
				return 0, errors.New("the response message is not protobuf")
			}
			msg = msg[8:]
		case 2:
			l, k := binary.Uvarint(msg)
			if k <= 0 || l > uint64(len(msg)-k) {
				return 0, errors.New("the response message is not protobuf")
			}
			msg = msg[k+int(l):]
		case 5:
			if len(msg) < 4 {
				return 0, errors.New("the response message is not protobuf")
			}
			msg = msg[4:]
		default:
			return 0, errors.New("the response message is not protobuf")
		}
	}
	return status, nil
}
