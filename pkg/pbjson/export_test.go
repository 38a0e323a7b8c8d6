package pbjson

// SetEachElement switches d between one array per repeated message field (false, the
// default) and one allocation per element (true), for the benchmarks of the layouts.
func SetEachElement(d *Decoder, on bool) { d.eachElement = on }
