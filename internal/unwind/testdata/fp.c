/* Built -fno-omit-frame-pointer -fno-asynchronous-unwind-tables
 * -fno-unwind-tables: the unwinder must cross it by its frame pointer. */
int cfi_leaf(int x);
extern volatile int sink;
__attribute__((noinline)) int fp_middle(int x) { return cfi_leaf(x + 1) * 5 + sink; }
