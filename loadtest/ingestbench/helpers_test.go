package ingestbench

// testTrace is the small trace slice committed for tests.
const testTrace = "../../testdata/mooncake_small.jsonl"
