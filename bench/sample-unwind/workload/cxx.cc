// A C++ workload for the unwinding benchmark, built -O2 -fomit-frame-pointer:
// calls through libstdc++ (string streams, hashing, sorting) and libc (qsort
// calling back into C++), several frameless levels deep under main.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

static volatile unsigned sink;

__attribute__((noinline)) static std::string format_row(int i) {
	std::ostringstream os;
	os << "row-" << i << ':' << (i * 2654435761u) << ';' << (i % 97) * 0.5;
	return os.str();
}

__attribute__((noinline)) static unsigned hash_rows(int n) {
	std::unordered_map<std::string, int> m;
	for (int i = 0; i < n; i++)
		m[format_row(i)] += i;
	unsigned h = 0;
	for (auto &kv : m)
		h += std::hash<std::string>{}(kv.first) ^ kv.second;
	return h;
}

static int cmp_int(const void *a, const void *b) {
	unsigned x = *(const unsigned *)a * 2654435761u, y = *(const unsigned *)b * 2654435761u;
	return x < y ? -1 : x > y;
}

__attribute__((noinline)) static unsigned sort_qsort(int n) {
	std::vector<unsigned> v(n);
	for (int i = 0; i < n; i++)
		v[i] = i * 7919u;
	qsort(v.data(), v.size(), sizeof(unsigned), cmp_int);
	return v[n / 2];
}

__attribute__((noinline)) static unsigned tree_walk(int n) {
	std::map<unsigned, std::string> t;
	for (int i = 0; i < n; i++)
		t.emplace(i * 40503u, std::to_string(i));
	unsigned s = 0;
	for (auto &kv : t)
		s += kv.second.size() + std::strlen(kv.second.c_str());
	return s;
}

__attribute__((noinline)) static unsigned level3(int round) {
	switch (round % 3) {
	case 0: return hash_rows(20000);
	case 1: return sort_qsort(200000);
	default: return tree_walk(50000);
	}
}

__attribute__((noinline)) static unsigned level2(int round) { return level3(round) + 1; }
__attribute__((noinline)) static unsigned level1(int round) { return level2(round) * 3; }

int main(int argc, char **argv) {
	int rounds = argc > 1 ? atoi(argv[1]) : 100;
	for (int r = 0; r < rounds; r++)
		sink += level1(r);
	return 0;
}
