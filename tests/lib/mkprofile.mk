# mkprofile.mk - the test helper that writes a known profile and dumps any profile.
EXTRA_TEST_BINS += $(B)/tests/lib/mkprofile

$(B)/tests/lib/mkprofile: tests/lib/mkprofile.c $(CORE_LIB) $(INJ_LIB)
	$(call msg,CC,$<)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(PKG_CFLAGS) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $< $(CORE_LIB) $(INJ_LIB) $(LIBS)
