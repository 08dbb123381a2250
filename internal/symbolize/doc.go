// Package symbolize turns addresses of processes and of the kernel into
// frames, for every pipeline that records them (the sampler's stacks and
// the caller stacks of timed calls): the kernel's symbols from
// /proc/kallsyms.
package symbolize
