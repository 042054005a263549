package plugins

// DefaultPressureWeight is kv-cost's pressure_weight when a profile does
// not set it, and the default of the cell's routing.kv_pressure_weight:
// one cached block a pod is expected to evict costs as much as one block
// of decode load (see the package doc, "Cache pressure"). It was chosen by
// measurement (loadtest hierarchy, README "Measured").
const DefaultPressureWeight = 1.0
