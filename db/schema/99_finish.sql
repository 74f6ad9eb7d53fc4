-- Back to the migrating user.
RESET ROLE;
