package cell

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	cellv1 "github.com/cellrouter/cellrouter/api/cell/v1"
	"github.com/cellrouter/cellrouter/cell/snapshot"
)

// snapshotChunk is the size of the pieces StreamSnapshot sends, well under
// gRPC's default 4 MiB message limit.
const snapshotChunk = 256 << 10

// StreamSnapshot streams a snapshot of the cell's index state, taken now,
// to a replica that bootstraps from it. It needs the admin scope, like
// every CellService call (run_security.go).
func (s *stateServer) StreamSnapshot(req *cellv1.StreamSnapshotRequest, stream grpc.ServerStreamingServer[cellv1.SnapshotChunk]) error {
	if req.GetCellId() != s.cellID {
		return status.Errorf(codes.FailedPrecondition, "cell: snapshot asked for cell %q, this is cell %q", req.GetCellId(), s.cellID)
	}
	if s.snapshot == nil {
		return status.Error(codes.Unavailable, "cell: snapshots are not available")
	}
	w := &chunkWriter{send: stream.Send}
	st, err := s.snapshot(w)
	switch {
	case w.err != nil:
		return w.err // the caller went away
	case errors.Is(err, snapshot.ErrPodsChanged):
		return status.Error(codes.Unavailable, err.Error())
	case err != nil:
		return status.Errorf(codes.Internal, "cell: snapshot: %v", err)
	}
	return w.finish(uint64(st.Bytes))
}

// chunkWriter cuts what is written into SnapshotChunks.
type chunkWriter struct {
	send func(*cellv1.SnapshotChunk) error
	buf  []byte
	err  error
}

func (w *chunkWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 && w.err == nil {
		k := min(len(p), snapshotChunk-len(w.buf))
		w.buf = append(w.buf, p[:k]...)
		p = p[k:]
		if len(w.buf) == snapshotChunk {
			w.err = w.send(&cellv1.SnapshotChunk{Data: w.buf})
			w.buf = make([]byte, 0, snapshotChunk)
		}
	}
	if w.err != nil {
		return 0, w.err
	}
	return n, nil
}

// finish sends the last chunk, which carries the total size.
func (w *chunkWriter) finish(total uint64) error {
	if w.err != nil {
		return w.err
	}
	return w.send(&cellv1.SnapshotChunk{Data: w.buf, TotalBytes: total})
}

// bootstrap fetches a snapshot from the replica at sc.BootstrapFrom and
// decodes it (it is checked like a file: checksum, identity, structure).
// With tls set the cell presents its own certificate, and with
// bootstrap_key_file an API key.
func (c *Cell) bootstrap(ctx context.Context, sc SnapshotConfig, id snapshot.Identity) (*snapshot.Snapshot, error) {
	creds := insecure.NewCredentials()
	if c.sec.server != nil {
		creds = credentials.NewTLS(c.sec.server.ClientConfig())
	}
	if sc.BootstrapKeyFile != "" {
		key, err := os.ReadFile(sc.BootstrapKeyFile)
		if err != nil {
			return nil, fmt.Errorf("snapshot.bootstrap_key_file: %w", err)
		}
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+strings.TrimSpace(string(key)))
	}
	conn, err := grpc.NewClient(sc.BootstrapFrom, grpc.WithTransportCredentials(creds))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	stream, err := cellv1.NewCellServiceClient(conn).StreamSnapshot(ctx, &cellv1.StreamSnapshotRequest{CellId: id.CellID})
	if err != nil {
		return nil, err
	}
	var data []byte
	for {
		chunk, err := stream.Recv()
		if err == io.EOF {
			return nil, errors.New("stream ended without its last chunk")
		}
		if err != nil {
			return nil, err
		}
		data = append(data, chunk.GetData()...)
		if int64(len(data)) > sc.MaxBytes {
			return nil, fmt.Errorf("snapshot larger than snapshot.max_bytes = %d", sc.MaxBytes)
		}
		if t := chunk.GetTotalBytes(); t != 0 {
			if t != uint64(len(data)) {
				return nil, fmt.Errorf("received %d bytes of a %d-byte snapshot", len(data), t)
			}
			return snapshot.Decode(data, id)
		}
	}
}
