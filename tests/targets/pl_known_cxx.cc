/* pl_known_cxx.cc - a C++ target: every operator new/delete form and std::vector/string/map growth at known sites (see pl_common.h). */
#include <map>
#include <new>
#include <string>
#include <vector>

#include "pl_common.h"

#define OBJ_N 20000
#define ARR_N 5000
#define AL_N 1000
#define NT_N 1000
#define DEL_N 10000
#define VEC_N 100000
#define STR_N 10000
#define MAP_N 5000

PL_RANGE(cnew); PL_RANGE(carr); PL_RANGE(cal); PL_RANGE(cnt); PL_RANGE(cdel);
PL_RANGE(vec); PL_RANGE(str); PL_RANGE(map);

struct Obj {
	long a[6];
};

struct alignas(128) Big {
	char b[256];
};

static Obj *obj_p[OBJ_N];
static char *arr_p[ARR_N];
static Big *al_p[AL_N];
static char *al_arr_p[AL_N];
static char *nt_arr_p[NT_N];
static Obj *nt_obj_p[NT_N];
static std::vector<int> *vec_p;
static std::string *str_p;
static std::map<int, int> *map_p;
static int allocated;

PL_SITE(cnew) static void site_cnew(void)
{
	for (int i = 0; i < OBJ_N; i++) {
		obj_p[i] = new Obj;
		obj_p[i]->a[0] = i;
	}
}

PL_SITE(carr) static void site_carr(void)
{
	for (int i = 0; i < ARR_N; i++) {
		arr_p[i] = new char[300];
		pl_mark(arr_p[i], 300, 11);
	}
}

PL_SITE(cal) static void site_cal(void)
{
	for (int i = 0; i < AL_N; i++) {
		al_p[i] = new Big;
		al_p[i]->b[0] = 12;
		al_arr_p[i] = new (std::align_val_t(64)) char[200];
		pl_mark(al_arr_p[i], 200, 13);
	}
}

PL_SITE(cnt) static void site_cnt(void)
{
	for (int i = 0; i < NT_N; i++) {
		nt_arr_p[i] = new (std::nothrow) char[150];
		pl_mark(nt_arr_p[i], 150, 14);
		nt_obj_p[i] = new (std::nothrow) Obj;
		nt_obj_p[i]->a[5] = i;
	}
}

PL_SITE(cdel) static void site_cdel(void)
{
	static Obj *v[DEL_N];
	for (int i = 0; i < DEL_N; i++)
		v[i] = new Obj;
	for (int i = 0; i < DEL_N; i++)
		delete v[i];
}

PL_SITE(vec) static void site_vec(struct pl_site *s)
{
	size_t cap = 0;
	vec_p = new std::vector<int>;
	for (int i = 0; i < VEC_N; i++) {
		vec_p->push_back(i);
		if (vec_p->capacity() != cap) {
			cap = vec_p->capacity();
			pl_truth(s, cap * sizeof(int), 1, 0);
		}
	}
}

PL_SITE(str) static void site_str(struct pl_site *s)
{
	size_t cap = 0;
	str_p = new std::string;
	cap = str_p->capacity(); /* the in-place buffer, no allocation */
	for (int i = 0; i < STR_N; i++) {
		*str_p += (char)('a' + i % 26);
		if (str_p->capacity() != cap) {
			cap = str_p->capacity();
			pl_truth(s, cap + 1, 1, 0);
		}
	}
}

PL_SITE(map) static void site_map(void)
{
	map_p = new std::map<int, int>;
	for (int i = 0; i < MAP_N; i++)
		(*map_p)[i] = 2 * i;
}

static void pl_alloc(void)
{
	if (allocated++)
		return;
	site_cnew();
	site_carr();
	site_cal();
	site_cnt();
	site_cdel();
	struct pl_site *vs = pl_site("vec", __start_pl_site_vec, __stop_pl_site_vec);
	site_vec(vs);
	struct pl_site *ss = pl_site("str", __start_pl_site_str, __stop_pl_site_str);
	site_str(ss);
	site_map();

	struct pl_site *s = pl_site("cnew", __start_pl_site_cnew, __stop_pl_site_cnew);
	pl_truth(s, sizeof(Obj), OBJ_N, 1);
	s = pl_site("carr", __start_pl_site_carr, __stop_pl_site_carr);
	pl_truth(s, 300, ARR_N, 1);
	s = pl_site("cal", __start_pl_site_cal, __stop_pl_site_cal);
	pl_truth(s, sizeof(Big), AL_N, 1);
	pl_truth(s, 200, AL_N, 1);
	s = pl_site("cnt", __start_pl_site_cnt, __stop_pl_site_cnt);
	pl_truth(s, 150, NT_N, 1);
	pl_truth(s, sizeof(Obj), NT_N, 1);
	s = pl_site("cdel", __start_pl_site_cdel, __stop_pl_site_cdel);
	pl_truth(s, sizeof(Obj), DEL_N, 0);
	/* The container objects themselves, and their final buffers. */
	pl_truth(vs, sizeof(std::vector<int>), 1, 1);
	pl_live(vs, vec_p->capacity() * sizeof(int), 1);
	pl_truth(ss, sizeof(std::string), 1, 1);
	pl_live(ss, str_p->capacity() + 1, 1);
	s = pl_site("map", __start_pl_site_map, __stop_pl_site_map);
	pl_truth(s, sizeof(std::map<int, int>), 1, 1);
	pl_truth(s, sizeof(std::_Rb_tree_node<std::pair<const int, int>>), MAP_N, 1);
}

static void pl_verify_and_free(void)
{
	if (!allocated)
		return;
	allocated = 0;
	for (int i = 0; i < OBJ_N; i++) {
		if (obj_p[i]->a[0] != i)
			pl_damaged = 1;
		delete obj_p[i];
	}
	for (int i = 0; i < ARR_N; i++) {
		pl_check(arr_p[i], 300, 11);
		delete[] arr_p[i];
	}
	for (int i = 0; i < AL_N; i++) {
		if (al_p[i]->b[0] != 12 || ((uintptr_t)al_p[i] & 127))
			pl_damaged = 1;
		delete al_p[i];
		pl_check(al_arr_p[i], 200, 13);
		operator delete[](al_arr_p[i], std::align_val_t(64));
	}
	for (int i = 0; i < NT_N; i++) {
		pl_check(nt_arr_p[i], 150, 14);
		delete[] nt_arr_p[i];
		if (nt_obj_p[i]->a[5] != i)
			pl_damaged = 1;
		delete nt_obj_p[i];
	}
	for (int i = 0; i < VEC_N; i++)
		if ((*vec_p)[i] != i)
			pl_damaged = 1;
	delete vec_p;
	for (int i = 0; i < STR_N; i++)
		if ((*str_p)[i] != (char)('a' + i % 26))
			pl_damaged = 1;
	delete str_p;
	for (int i = 0; i < MAP_N; i++)
		if ((*map_p)[i] != 2 * i)
			pl_damaged = 1;
	delete map_p;
}

static void pl_dlopen(const char *lib)
{
	printf("dlopen-failed not in the C++ target (%s)\n", lib);
}

int main(int argc, char **argv)
{
	return pl_main(argc, argv);
}
