/* test_model_records.c — the models' records (params.h, adr/0113, adr/0115) and what is
 * registered for them above model/: every registered model has a name that parses back to
 * it, physical parameters that are the first n_phys of the table (the shear terms, φ0
 * included, when it has them), a NUTS target acceptance within (0, 1) above its floor, and
 * a block kernel at the likelihood's floor on this CPU. A model added without its kernel
 * fails here, not in a fit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "likelihood/pass_internal.h"
#include "xpcsfit/params.h"

static void test_every_model_is_whole(void **state)
{
	(void)state;
	assert_true(xf_model_count() >= 2);
	for (int k = 0; k < xf_model_count(); k++) {
		const xf_model_record *m = xf_model_at(k);
		assert_non_null(m);
		assert_int_equal(m->mode, k);
		assert_ptr_equal(xf_model_record_of(m->mode), m);
		xf_mode parsed = (xf_mode)-1;
		assert_int_equal(xf_mode_parse(m->name, &parsed), 0);
		assert_int_equal(parsed, m->mode);
		assert_string_equal(xf_mode_name(m->mode), m->name);
		assert_true(m->n_phys >= 1 && m->n_phys <= XF_N_PHYS);
		assert_int_equal(xf_mode_n_phys(m->mode), m->n_phys);
		if (m->shear)
			assert_true(m->n_phys > XF_P_PHI0);
		assert_true(m->nuts_accept_default > 0.0 && m->nuts_accept_default < 1.0);
		assert_true(m->nuts_accept_default >= m->nuts_accept_floor);
		assert_non_null(xf_pass_kernel_of(m->mode));
	}
	assert_null(xf_model_at(xf_model_count()));
	assert_null(xf_model_at(-1));
	assert_null(xf_pass_kernel_of((xf_mode)xf_model_count()));
}

static void test_names_and_default(void **state)
{
	(void)state;
	/* every name a config may give is a registered model; homodyne's two static names
	 * are the default model */
	for (size_t k = 0; xf_mode_names[k]; k++) {
		xf_mode m;
		assert_int_equal(xf_mode_parse(xf_mode_names[k], &m), 0);
		assert_non_null(xf_model_at(m));
	}
	xf_mode m = XF_MODE_LAMINAR;
	assert_int_equal(xf_mode_parse("static_isotropic", &m), 0);
	assert_int_equal(m, xf_model_default()->mode);
	assert_string_equal(xf_model_default()->name, "static");
	assert_int_equal(xf_mode_parse("no_such_model", &m), -1);
	assert_int_equal(m, xf_model_default()->mode); /* untouched */
	/* the record's numbers (adr/0041): laminar flow's floor 0.90 */
	assert_true(xf_model_record_of(XF_MODE_LAMINAR)->nuts_accept_floor == 0.90);
	assert_true(xf_model_record_of(XF_MODE_STATIC)->scaling_individual_by_default);
	assert_false(xf_model_record_of(XF_MODE_LAMINAR)->scaling_individual_by_default);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_model_is_whole),
		cmocka_unit_test(test_names_and_default),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
