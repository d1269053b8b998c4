package transform

// Engine is one process's filters and transformations.
type Engine struct {
	Filters *Filters
	Scripts *Scripts
	// TransformationsOff is the operator's switch (hookd serve
	// --no-transformations): no script runs; an endpoint with one gets
	// its deliveries failed, never sent untransformed (its owner may rely
	// on the script to drop fields), and saving or trying one is refused.
	TransformationsOff bool
}

// New returns an engine with limits l.
func New(l Limits, transformationsOff bool) *Engine {
	return &Engine{Filters: NewFilters(), Scripts: NewScripts(l), TransformationsOff: transformationsOff}
}
