/* sym_cxx.cc - C++ target for the symbolizer: namespaces, a class method, a
 * template and always_inline helpers allocating at marked lines.  Prints
 * "addr LABEL 0xRA" for return addresses its allocation hook sees, "ready",
 * then waits for SIGTERM (exit 0); SIGUSR1 makes it dlopen libm and print
 * "addr late_cos 0x...".  tests/unit/test_symbolize.c knows the frames. */
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <unistd.h>

/* The allocation hook: reports its return address, the site under test. */
extern "C" __attribute__((noinline)) void *traced_alloc(size_t n, const char *label)
{
	void *ra = __builtin_extract_return_addr(__builtin_return_address(0));
	std::printf("addr %s %p\n", label, ra);
	return std::malloc(n);
}

namespace ns {

__attribute__((always_inline)) inline void *alloc_inline(size_t n, const char *label)	// LINE:alloc_def
{
	void *p = traced_alloc(n, label);	// LINE:alloc_site
	std::memset(p, 0, n);
	return p;
}

__attribute__((always_inline)) inline void *outer_inline(size_t n, const char *label)
{
	return alloc_inline(n * 2, label);	// LINE:outer_call
}

class Widget {
public:
	void grow(unsigned long n);
	void *buf() const { return buf_; }
private:
	void *buf_ = nullptr;
};

__attribute__((noinline)) void Widget::grow(unsigned long n)	// LINE:grow_def
{
	std::printf("addr grow_caller %p\n",
		    __builtin_extract_return_addr(__builtin_return_address(0)));
	buf_ = alloc_inline(n, "grow");	// LINE:grow_call
}

namespace detail {

template <typename T>
__attribute__((noinline)) T *make_array(unsigned long n)
{
	T *p = static_cast<T *>(traced_alloc(n * sizeof(T), "tmpl"));	// LINE:tmpl_site
	p[0] = T();
	return p;
}

} // namespace detail

__attribute__((noinline)) void *run_nested(int k)
{
	void *p = outer_inline(k + 16, "nested");	// LINE:nested_call
	asm volatile("" ::: "memory");	/* no tail call: keep this frame */
	return p;
}

} // namespace ns

static volatile sig_atomic_t stop, load;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static void on_usr1(int sig)
{
	(void)sig;
	load = 1;
}

int main()
{
	std::setvbuf(stdout, nullptr, _IOLBF, 0);
	sigset_t block, old;
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGUSR1);
	sigprocmask(SIG_BLOCK, &block, &old);
	std::signal(SIGTERM, on_term);
	std::signal(SIGUSR1, on_usr1);

	ns::Widget w;
	w.grow(64);	// LINE:main_grow
	double *d = ns::detail::make_array<double>(8);
	void *q = ns::run_nested(3);
	/* A libc function start: symbolized from ELF symbols only. */
	std::printf("addr malloc_fn %p\n", (void *)&malloc);
	std::printf("ready\n");
	/* Signals are blocked but here, so none is lost before we wait. */
	while (!stop) {
		sigsuspend(&old);
		if (load) {
			/* SIGUSR1: a library loaded after the symbolizer started. */
			load = 0;
			void *h = dlopen("libm.so.6", RTLD_NOW);
			std::printf("addr late_cos %p\n", h ? dlsym(h, "cos") : nullptr);
		}
	}
	std::free(w.buf());
	std::free(d);
	std::free(q);
	return 0;
}
