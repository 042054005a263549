// Package cellrouter is a global, KV-cache-aware request router for LLM
// inference fleets that span many clusters.
//
// Requests go to the global tier (package global, command globald), which
// knows each cell through gossiped Bloom-filter summaries (package gossip) and
// hands each request to the cell most likely to hold its prefix. A cell
// (package cell, command celld) owns up to 256 engine pods, keeps an exact
// index of which pod holds which KV block (package cell/index), fed by the
// engines' KV events (package cell/events), and routes each request to a pod.
//
// This root package holds no code, only repository-wide checks: every
// package has a doc comment, and imports point one way.
package cellrouter
