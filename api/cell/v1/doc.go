// Package cellv1 is the generated Go code of cellrouter.cell.v1 (cell.proto):
// the CellService control plane of one cell (pods, cell state, draining, dry-run
// routing), with its grpc-gateway REST handlers and OpenAPI v2 document.
// Regenerate with api/generate.sh; do not edit the generated files.
package cellv1
