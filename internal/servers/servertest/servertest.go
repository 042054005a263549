package servertest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"

	"github.com/cellrouter/cellrouter/api/openai"
)

// Do sends one request with a JSON body and returns the status, the
// headers and the body. A transport error fails t.
func Do(t testing.TB, method, url, body string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// ErrorBody decodes an OpenAI error body, failing t when body is not one.
func ErrorBody(t testing.TB, body string) openai.ErrorDetail {
	t.Helper()
	var eb struct {
		Error *openai.ErrorDetail `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &eb); err != nil || eb.Error == nil {
		t.Fatalf("body %s is not an OpenAI error body (%v)", body, err)
	}
	return *eb.Error
}

// ReflectServices asks the gRPC server at addr, through server reflection,
// for its services (sorted), and for the descriptor of each one, failing t
// when one has none.
func ReflectServices(t testing.TB, addr string) []string {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	stream, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ask := func(req *reflectionpb.ServerReflectionRequest) *reflectionpb.ServerReflectionResponse {
		if err := stream.Send(req); err != nil {
			t.Fatal(err)
		}
		resp, err := stream.Recv()
		if err != nil {
			t.Fatalf("reflection: %v", err)
		}
		if e := resp.GetErrorResponse(); e != nil {
			t.Fatalf("reflection error %d: %s", e.GetErrorCode(), e.GetErrorMessage())
		}
		return resp
	}
	var names []string
	for _, s := range ask(&reflectionpb.ServerReflectionRequest{
		MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}).GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	for _, n := range names {
		resp := ask(&reflectionpb.ServerReflectionRequest{
			MessageRequest: &reflectionpb.ServerReflectionRequest_FileContainingSymbol{FileContainingSymbol: n}})
		if len(resp.GetFileDescriptorResponse().GetFileDescriptorProto()) == 0 {
			t.Errorf("no descriptor for %s", n)
		}
	}
	slices.Sort(names)
	return names
}

// LogBuffer is an io.Writer a test reads while a daemon's goroutines write
// to it (a slog handler's output).
type LogBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns everything written so far.
func (l *LogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// RefusedAddr returns a loopback host:port that refuses connections for the
// rest of the test: a socket bound to it but not listening. The port stays
// taken, so no server the test starts later is given it; a listener closed
// at once would free it, and a server that got it could end up receiving
// (or, for a proxy, forwarding to itself) what was meant to fail.
func RefusedAddr(t testing.TB) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(sa.(*syscall.SockaddrInet4).Port))
}

// RawRefusals are raw requests net/http refuses before any handler runs,
// keyed by name, each with the status a server behind package edge
// answers it with (in OpenAI's error shape): a 1 MiB header, an HTTP/1.1
// request without Host, and a head cut off (the server's header timeout
// must be short for that one).
var RawRefusals = []struct {
	Name, Raw string
	Status    int
}{
	{"1 MiB header", "GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 1<<20) + "\r\n\r\n", 431},
	{"HTTP/1.1 without Host", "GET /v1/models HTTP/1.1\r\n\r\n", 400},
	{"slow headers", "GET /v1/models HTTP/1.1\r\nHost: x\r\n", 408},
}

// Raw sends raw on a new connection to addr (over TLS with client set)
// while reading one response, and returns its status, headers and body.
// A transport error fails t.
func Raw(t testing.TB, addr string, client *tls.Config, raw string) (int, http.Header, string) {
	t.Helper()
	var c net.Conn
	var err error
	if client != nil {
		c, err = tls.Dial("tcp", addr, client)
	} else {
		c, err = net.Dial("tcp", addr)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	go io.WriteString(c, raw)
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading the answer to %.40q: %v", raw, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}
