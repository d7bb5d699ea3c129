AD.start();
