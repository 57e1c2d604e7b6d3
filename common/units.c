typedef int gs_units_placeholder;
